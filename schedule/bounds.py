"""A lower bound on any schedule's makespan, for judging how good a schedule is.

No race-free schedule of a function on the simulated device
(`npuir.backends.npu.simulator`) can finish before the largest of the bounds below, whatever
its stream assignment, issue order, events and core limits (those the program writes in
scopes kept, and an aiv collective's as a mode chooses them, 8; none on an engine no mode
limits, 9), as long as it runs each
communicator group's collectives one after another (`npuir.analysis.partition.
collective_chain`: every mode that places ops lowers them so, and one stream runs them so;
a hand-annotated `user` schedule with one group on two streams is outside the bound).  The
dependences below are the program's with that chain added.  They rest on what the simulator
does with one compute op v of engine e (``C`` = e's cores, ``L`` = `timing.launch_cost`), all
of it the rules of `npuir.backends.npu.timing` (the list after the terms says which term
rests on which rule):

- An *ordinary* op runs ``B`` blocks (its blockDim, ``1 <= B <= par``: its parallelism, or
  less under a core limit), each block to completion on one core in
  ``b(B) = timing.block_ns(work, B)``.  It starts at s on one core; the
  block dispatched then holds that core over [s, s + L + b(B)] (the launch is paid once,
  on the cores granted before it is over), and every other block holds a core for at least
  b(B) somewhere in the op's run.  So v runs for at least ``L + b(B)`` and holds at least
  ``L + B b(B)`` core-nanoseconds, as a 1-core piece of length L + b(B) and B - 1 pieces of
  length b(B), all inside its run.
- A `full_core_sync` op is granted ``g`` cores, ``1 <= g <= C`` (its limit or every core),
  holds them from before its start to its end, and runs for
  ``d(g) = timing.held_ns(work, g, par)`` (L plus the roofline on ``min(g, par)`` cores with
  a ``g / C`` share of HBM): one g-core piece of
  length d(g).  An aiv collective holds ``1 <= g <= C`` vector cores for its fixed ring
  time plus L (`timing.collective_task_ns`); an sdma collective holds none; an op GE runs without a device task
  (`cost.runs_without_task`) takes no time and no core.

Call each way v may run an *option* (its blockDim or cores) with a duration ``d`` and an
energy ``E`` (the core-nanoseconds above: ``L + B b(B)`` or ``g d(g)``); then

- ``d(v)`` = the least d over v's options: no run of v is shorter;
- ``a(v)`` = the least E: no run of v holds fewer core-nanoseconds.  Since every option's
  energy is at least ``L + max(F, B*C/bw)`` (F the op's FLOPs over one core's rate, B its
  bytes, bw the HBM bandwidth), a(v) counts launch, arithmetic and memory time, usually at
  one block;
- ``h(v)`` = the longest d-weighted path into v (its producers, v excluded) and ``t(v)`` the
  longest out of v.  In a race-free schedule v starts no earlier than h(v) (each producer
  ends before it starts) and ends no later than M - t(v) (M the makespan).

1. **Critical path** ``max h(v) + d(v)``: a chain runs in order, each op at least d(v).

2. **Engine arithmetic.**  An op's FLOPs at one core's rate is the least core-time its
   arithmetic occupies however many blocks or cores it runs on (``B b(B) >= F``); W_e / cores is a bound, W_e the
   engine's total (memory-bound ops, launch and collectives left out: the bound before 4).

3. **Engine window.**  No op of e starts before H_e = min h(v) nor ends after M - T_e with
   T_e = min t(v), so W_e lies in [H_e, M - T_e] on `cores` cores: M >= H_e + W_e/C + T_e.

   (1-3 are npuir's first bound, `arithmetic_ns`; the terms below tighten it.)

4. **Core-time window.**  For any set S of e's ops, every op of S holds its energy's
   core-nanoseconds inside [min_S h, M - min_S t], and at most C cores are held at once, so
   ``M >= min_S h + sum_S a(v) / C + min_S t``.  S ranges over the ops whose h is at least a
   threshold (one sweep in order of h) and those whose t is (one in order of t); the
   whole engine is the lowest threshold.  On engines of up to `WINDOW_PAIRS_OPS` ops S
   also ranges over the ops whose h *and* t are at least a pair of thresholds (a sweep in
   order of t for each threshold of h), which leaves out the short ops at both ends of a
   few long ones.  As M is an integer, ``sum_S a(v) / C`` is rounded up.

5. **Moldable trade-off.**  Fix the option o_v (blockDim or cores) every op of a schedule
   got.  Both ``M >= H_S + T_S + sum_{v in S} E_v(o_v) / C`` (the window of 4 for a set S)
   and ``M >= sum_{v in P} d_v(o_v)`` (any dependence path P) hold, so for every lambda in
   [0, 1] so does their convex combination.  Each op's share of it is bounded below by a
   minimum over its options: ``min_o [lambda E_v(o) / C + (1 - lambda) d_v(o)]`` for v in
   S and on P, ``lambda a(v) / C`` for v in S off P, ``(1 - lambda) d(v)`` on P outside S.
   The sum is a constant plus a sum over P of non-negative per-op weights, maximised over P
   by one longest-path pass.  It beats 4 where an op on a long path must run many blocks
   to keep the path short, and so holds more core-time than on one.

   Several paths can need many cores at once; then any average of paths does better:
   ``M >= lambda (H_S + T_S + sum_S g d / C) + (1 - lambda) sum_i len_{P_i} / m`` for paths
   P_1..P_m, each op on c_v of them charged ``min_o [lambda E / C + (1 - lambda) c_v d / m]``
   (the same argument, with the path term an average of valid inequalities).  After the
   best single path, each further path is the heaviest under the durations of the options
   attaining those minima (a Frank-Wolfe step of 1/m towards the best average), and every
   average met is a bound.

   Computed for lambda = k/16, k = 1..15, S the whole engine and the best set of 4, with up
   to 24 paths mixed in, in integers scaled by 16Cm so the result can be rounded up
   exactly; each path is one longest-path pass, so only as many as `MOLDABLE_BUDGET`
   allows (none above it: the term is left out, the bound stays valid).

6. **Energetic reasoning** (cumulative scheduling, Baptiste, Le Pape & Nuijten 1999).  To
   show that no schedule has makespan M, give each op of e the release r = h(v) and the
   deadline D = M - t(v).  An option with ``r + d > D`` cannot be used; if no option of v
   is left, M is impossible.  Otherwise each of the option's pieces (above: c cores held
   without a break for at least p, inside v's run and so inside [r, D]) holds cores inside
   an interval [t1, t2] for at least ``c * max(0, min(t2 - t1, p - max(0, t1 - r), p -
   max(0, D - t2)))`` (its overlap when pushed to the earliest or the latest start, the
   least over its placements; a longer piece overlaps no less), and the least over v's
   usable options of the sum over its pieces is v's energy in [t1, t2].  (The blocks of an
   ordinary op may sit apart in time; each is still one rigid piece, which is all the
   argument needs.)  If the energies of e's ops in some interval exceed ``C * (t2 - t1)``,
   no schedule has makespan M -- or less, the test being made on the integer M.  The bound
   is one more than the largest M found impossible by a search upward from the other terms,
   over the intervals whose ends are releases, deadlines, r + d(v), D - d(v) and, for an op
   whose blocks no mode changes, its later blocks' earliest end ``r + L + b`` and latest
   start ``D - b`` (the ends of their compulsory parts).  Every M
   proven impossible is a sound bound on its own, so the search needs no monotonicity.

   Before the energies, *compulsory parts* tighten releases and deadlines.  Take an op u
   with one option that holds every core: a rigid C-core piece of length p (then u holds
   every core over ``[D - p, r + p]``), or C blocks of length b with ``D - r < L + 2b`` (no
   core can run two of them, so each core runs one, computing inside ``[r + L, D]``, and
   every core is u's over ``[D - b, r + L + b]``).  No other op's piece overlaps that
   interval [k1, k2]: an op whose first piece (held from its start, its shortest over its
   options) cannot end by k1 from its release starts at k2 or later, and one none of whose
   pieces can start at k2 and end by its deadline ends by k1.  Repeated while something
   changes (at most `_KEEP_OUT_ROUNDS` times); an op left without room makes M
   impossible.  It is the one-core-per-block argument the energies (cores as a continuous
   resource) miss: two ops that each need the whole engine within windows too short for
   two rounds of blocks run one after the other.
   The test costs ``intervals x options`` per op; it is made on the engines where that stays
   within `ENERGETIC_BUDGET` (a few dozen ops), and leaving an engine out keeps the bound
   valid, only looser.

7. **Events at joins.**  A synchronized schedule (every cross-stream dependence ordered by
   events, and the last op of every stream before the return, as `insert-events` makes it
   and `sync-verify` demands) pays for a join.  Let ``s(v)`` be a lower bound on v's
   start, ``f(p) = s(p) + d(p)``, and ``ev`` = `timing.event_cost` (``event_record_ns`` +
   ``event_wait_ns`` below stand for `timing.record_cost` and `timing.wait_cost`).
   For a producer p of v on another stream, any happens-before chain from p to v leaves
   p's stream through a record issued after p and reaches v's stream through a wait W
   issued before v; W blocks v's stream until that record has executed (after p ended,
   so not before ``f(p) + event_record_ns``) and then takes ``event_wait_ns``.  So v starts
   at least ``f(p) + ev``, and W is one more job of v's stream before v, released at
   ``f(p) + event_record_ns`` and lasting ``event_wait_ns``.  The producers on v's own
   stream, a set S, run one after another before v (a stream is first in first out), so
   for every threshold t the jobs of v's stream released at ``t`` or later (a producer p
   at s(p)) end after ``t`` plus their durations: ``ser(J) = max_t (t + sum_{x in J,
   release(x) >= t} d(x))``, with t over the releases of J, bounds their end.  Sort v's
   producers by f, largest first: p_1, ..., p_k.  Whatever S is, let j + 1 be the first
   index not in S; then S holds p_1..p_j, p_{j+1} is on another stream, and
   ``s(v) >= min_{j=0..k} max(f(p_{j+1}) + ev, ser({p_1..p_j} + W_{j+1}))`` with W_{j+1}
   the wait released at ``f(p_{j+1}) + event_record_ns`` (the first term and the wait
   absent for j = k).  Computed in topological order (s(v) at least term 11's h(v)), the
   bound is ``max_v s(v) + d(v)``.
   The return counts every op before it as a producer: an op on the default stream runs
   before it, and one elsewhere is followed on its stream by a last op the return joins.
   Above `_JOIN_FANIN` producers (`_RETURN_FANIN` for the return) a node takes only
   ``max f(p)`` (still a bound).  Schedules that leave a cross-stream dependence to timing
   alone are outside this term.

8. **Written limits.**  A count an enclosing `coreset.limit` scope or the module's
   global limit gives an op (where seed 003's table lets it act) is kept by every mode
   (`stream-partition`'s limit search changes only ops without one, and a scope moves with
   its op), so the op runs as the simulator runs it under that count g: an ordinary op on
   exactly ``min(par, g)`` blocks, a `full_core_sync` op and an aiv collective holding
   exactly g cores.  Its options in every term above are those alone.  Stream limits are
   left out (a mode may move the op to another stream).  An ordinary op without a written
   limit keeps every option, since a mode may limit it (auto's limit search gives the ops
   beside a holder the rest of the engine).  An aiv collective without one holds at least
   `least_aiv_cores` (the smallest count on auto's grid, an eighth of the vector cores:
   the only counts a mode gives it; unlimited, it holds them all): one option, that many
   cores for its whole run.  A limit below it that only a hand-run simulation applies
   is outside the bound.

9. **Serial engines.**  Call engine e *serial* when no mode can limit its ops and each
   asks for all of them: the program writes no limit on e (no scope, stream limit or
   global count for e anywhere in the module), no op of e holds its cores while it waits
   (a `full_core_sync` op, or an aiv collective for the vector cores: only where one is does
   a mode limit an engine -- `stream-partition`'s limit search and `coreset-partition` limit
   nothing else), and every op of e that takes a task has ``par >= C``, so runs exactly C
   blocks.  Then at every instant e's cores are all free or all held by one op that got
   them all at one instant: by induction over the simulation's events, an op starts only
   when a core is free, so when all are, and takes all C (it has C blocks; a second op
   starting then gets none); all C blocks, dispatched together, wait through the launch
   together and end together, freeing every core at once.  So each op of e holds all C
   cores for ``d(v) = L + b(C)``: its only option is one rigid C-core piece of that length
   (energy ``C d(v)``), and terms 4-6 use it -- the window of 4 becomes
   ``min_S h + sum_S d(v) + min_S t``, e's ops one after another.
   On an engine that meets the first two conditions only (no mode limits it, some op is
   narrower than it), each ordinary op still runs exactly ``min(par, C)`` blocks: that is
   its only option (`unlimited_engines`).

10. **Core-time after the launches.**  An op computes on its cores only after its own
   launch: an ordinary op's every block runs its ``b(B)`` after ``s + L`` (blocks dispatched
   during the launch wait for it, later ones start at once), and a held op (full_core_sync,
   aiv collective, serial engine) holds its g cores through ``[s + L, end]``.  Call ``q(o)``
   the core-nanoseconds an option holds after its launch (``B b(B)``, ``g (d(g) - L)``) and
   ``q(v)`` its least over v's options.  For a set S of e's ops, each holds q(v) inside
   ``[min_S h + L, M - min_S t]``, so ``M >= min_S h + L + sum_S q(v) / C + min_S t``: term
   4's window a launch shorter, each launch left out of the energy.  It beats 4 when S has
   fewer ops than e has cores (one launch in the window instead of |S| / C), and it
   costs nothing of what term 9 needs: no assumption on limits or staggered launches.
   Terms 4 and 5 take both windows (5: ``E`` replaced by ``q`` and the ends by ``ends +
   L``), and term 6 places every piece but an ordinary op's first (its launch block) no
   earlier than ``r + L``.

11. **Crowded heads and tails.**  The h and t above are longest paths; they are tightened,
   node by node, by the windows of 4 and 10 over the op's ancestors (descendants) on one
   engine.  Let S be e's ops that precede v (every dependence path counts), ``g(u)`` the
   longest d-weighted path from u's end to v's start (the ops between, both excluded).
   Every u of S runs inside ``[h(u), s(v) - g(u)]``, so inside ``[min_S h, s(v) - min_S g]``,
   and holds a(u) core-nanoseconds there (q(u) after ``min_S h + L``), at most C at once:
   ``s(v) >= min_S h + max(sum_S a / C, L + sum_S q / C) + min_S g``.  S ranges over the
   ancestors whose h is at least a threshold (one sweep in order of h), and h(v) is the
   largest of that and its producers' ``h + d``, in topological order so every ancestor's
   h is final; t is tightened the same way over descendants, in reverse order.  Every
   term reads h and t only as bounds on a start and on the time after an end, so all stay
   valid (term 7 takes h(v) as a bound on v's start too).  It catches an engine's work
   that must all be done before a path leads to more of it -- a layer's expert gathers
   before the next layer's -- which the windows of 4, each over one interval, miss.
   Quadratic in the program (every node's ancestors), it is made only within
   `CROWDED_BUDGET`; beyond it h and t stay longest paths.

12. **The last op of an engine.**  Some op X of engine e ends last among e's ops, and no
   earlier than ``E_e = max_theta (theta + max(sum a / C, L + sum q / C))`` over the ops of e
   whose h is at least theta: they hold a(v) core-nanoseconds inside [theta, X's end] (q(v)
   after ``theta + L``), the windows of 4 and 10 without their tail.  X has no descendant on
   e (a descendant holds cores after X has ended, so ends later).  Fix a schedule and its X:
   term 7's pass, with X's end raised to E_e -- and on a serial engine (9), where every op
   runs exactly d(v), X's start raised to ``E_e - d(X)`` -- gives every node a bound on its
   start in that schedule, so the least over the candidates X of the pass's end is a bound.
   It charges the joins after an engine's busy window: in the seed's model the matmul that
   ends at the cube's end at best is joined by the return after it, with a wait on the
   default stream or a record and a wait from its own.  One pass per candidate (the
   nodes from X on), fewest tail first, stopping at the first that does not beat the other
   terms; made only within `LAST_OP_BUDGET`.

13. **Stream structures of a small program.**  Restrict a schedule to the compute ops: which
   of them share a stream and in what order each stream issues them is its *structure*.
   Terms 7 and 12 weigh each op's producers on its stream or elsewhere one op at a time;
   with the structure fixed, who follows whom on a stream is known, and so is the record
   a cross-stream consumer needs.  For an op x with a consumer c on another stream, c's
   happens-before chain leaves x's stream through a record issued after x (term 7); it
   executes after x ends.  Let y be the op after x on x's stream.  Either some such record
   (for some consumer of x elsewhere) is issued before y: it holds x's stream for
   `event_record_ns` after x's end, so y and every later op of the stream start at least
   ``f(x) + event_record_ns``, and it is one more job of that stream released at f(x); or
   every such record is issued after y: it executes after y's end, so every consumer of x
   elsewhere starts at least ``f(y) + event_record_ns + event_wait_ns``, after y (an
   edge y -> c).  Each x with a consumer elsewhere and an op after it has these two
   *sides*; every schedule of the structure takes one side per such x.
   For one structure and one side per record, take in a topological order of the
   dependences, the stream orders and the edges above (a cycle: no race-free schedule has
   this case) a least start for every op: at least h(v) (11), the end of every op before
   it on its stream, ``f(x) + event_record_ns`` after an op x whose record is issued right
   after it, ``rel + event_wait_ns`` with rel the latest executed record among its
   producers on other streams (``f(p) + event_record_ns``, or ``f(y) + event_record_ns``
   on the later side), and ``ser`` (7) of the jobs its stream runs before it: the ops
   before it (released at their starts), the records right after them, and one wait
   released at rel (several waits may be one, so one is counted).  The return runs on the
   default stream after that stream's ops (the structure says which stream is the default,
   or none) and waits, once at least, for the record after the last op of every other
   stream.  Term 12 then runs with the structure known: the engine's end E_e from these
   starts as thresholds, and only an op that reaches no other op of its engine through the
   dependences, stream orders and edges above may end last.  Each value bounds every
   schedule of its structure and sides; the bound is the least over all of them (the
   structures are the partitions of the ops into streams with every issue order that
   puts no op before an ancestor -- it would wait for the ancestor queued behind it, a
   deadlock -- times the default stream's choice).  In the seed's model
   it is the exact optimum: the record after the add either delays the first matmul on
   the add's stream (and so the cube's busy window) or makes the other matmul wait for the
   first one's end, and with both matmuls on the add's stream the same holds one op later
   for the first matmul's record.  Made on one unlowered function of at most
   `STRUCTURE_OPS` compute ops, within `STRUCTURE_BUDGET`, stopping at the first structure
   that does not beat the other terms.

14. **One core's chain of blocks.**  On an engine no mode limits (9's first two
   conditions: `unlimited_engines`), every ordinary op v runs exactly ``B = min(par, C)``
   blocks of ``b(B)`` each; call v *full-width* when ``B = C``.  From the dispatch rules,
   each block of v computes for b without a break on one core, no earlier than ``s(v) + L``
   (a block dispatched during the launch waits for it), two blocks on one core compute one
   after the other, and v ends with its last block: so v ends at least ``s(v) + L + b``, and
   when some core runs two of its blocks, at least ``s(v) + L + 2b``.  A full-width op
   either runs one block on every core (C blocks on C cores) -- call it *spread* -- or some
   core runs two of them.

   Fix a schedule, T its full-width ops that are not spread, and a core c.  The blocks c
   runs, in time order, are a *chain*: each computes after the one before it ends and
   after its op's start plus L, and its op ends no earlier.  Every spread op has a block on
   c.  So the ops of e with the schedule's starts and ends solve this *chain problem*
   (`npuir.schedule.core_chain`): each op starts at least h(v) and at least the lag after
   each op of e it depends on (the longest d-weighted path between them), the makespan is
   at least each op's end plus t(v); a spread op has one block on the chain and lasts at
   least ``L + b``; an op of T has none there and lasts at least ``L + 2b``, a narrow op
   none and at least ``L + b`` (the blocks the problem leaves out only make the real chain
   later).  The problem's values are each at their least for a given order of the chain's
   blocks, so its least makespan over every order, ``V(T)``, is at most M.  Each op w of T
   also has a core that runs two of its blocks, and each narrow op a core that runs one:
   that core's chain holds those blocks besides the spread ops', so M is at least
   ``V(T, w)``, the problem with w's blocks on the chain.  T is not known, so the bound is
   ``min_T max(V(T), max_w V(T, w))``, w over T and the `FULL_WIDTH_HOSTS` narrow ops with
   the longest blocks (any of them gives a bound).  It charges what the windows of 4-6
   cannot see: a long op's blocks on every core keep a chain of short full-width ops, each
   waiting for a vector op between them, from overlapping it, and running a short op on
   half the cores doubles its blocks on a core.  Each V is found by branch and bound (a
   search stopped by its budget gives the least bound left in its queue, still a bound);
   only on engines of at most `FULL_WIDTH_OPS` such ops with at most `FULL_WIDTH_CHOICES`
   full-width ones, and an engine whose search runs out of `FULL_WIDTH_VISITS` is left out.

**Launch is charged on one core** outside term 9 (in 4-6 and 10-12), although an op
granted all its cores at its start holds them all through its launch: on an engine a mode
or the program may limit, a limit one below the engine on one op leaves a core on which an
op of another stream launches meanwhile, and that schedule can beat every schedule without
limits (`test_bound.py`'s `test_a_core_limit_hides_a_launch_so_the_bound_counts_it_on_one_core`:
the seed's model, its critical matmul limited to 23 of 24 cube cores -- which breaks seed
003's pair rule, 23 + 24 > 24, and `coreset-check` refuses it, but the simulator runs it).
On an engine with ops narrower than it, block dispatch alone staggers launches the same
way, so term 9 leaves such engines out -- and not by a little: beside one two-block matmul,
ops that ask for the whole cube can start on the two cores it frees while another computes
on the rest, and a schedule of six such matmuls beats their launches and runs one after
another (`test_a_narrow_op_lets_the_wide_ones_hide_their_launches`).

**The timing rules each term rests on** (`npuir.backends.npu.timing`).  The terms read
every cost from there and their proofs use each cost only as a length, so a new cost for a
task (a wait that also pays a launch, another roofline) reaches them with no edit here; a
new start rule (when a record has executed, when a wait may start) changes what 7, 12 and
13 argue, and they are the ones to re-prove:

- *The roofline on a core grant* (`block_ns`, `held_ns`, `collective_task_ns`,
  `arithmetic_ns`): the options of every op, so d, a, q, h and t, and every term through
  them; 2 and 3 take `arithmetic_ns` as the least core-time of an op's arithmetic, which
  needs the roofline's compute term to be FLOPs over cores times one core's rate.
- *One launch at a task's start, before its blocks compute* (`launch_cost`): the options'
  ``L`` (all terms), the windows after the launches (10, 11, 12), the later blocks'
  earliest end in 6, the core chains of 14 (`core_chain`'s ``start + launch``), and the
  serial engine's rigid pieces (9).
- *A record holds its stream `record_cost`, and has executed at its end* (`record_cost`,
  `record_end`): 7, 12, 13 (a wait's release at ``f(p) + event_record_ns``, and in 13 the
  record that delays the op after x on its stream).
- *A wait starts once its stream is free and its record has executed, then holds the
  stream `wait_cost`* (`wait_cost`, `wait_end`): 7, 12, 13 (the wait as one more job of the
  consumer's stream, released at its record's end).  A wait that cost more (say, a launch
  as well) changes `wait_cost` only, and these terms stay proven: they read it as the
  wait's length and nothing else.
- Terms 1-6, 8-11 and 14 read no event cost: they hold for every schedule, events or not.

Events, launch queues, waiting for peers or for cores, and cores held before a start only
lengthen a schedule, so the maximum of all terms is a valid bound for every stream assignment and issue
order.  The simulator models no link contention (a collective's duration is fixed by its
size and collectives overlap freely), so a link term would not be a valid bound.  Profiles
(`npuir.backends.npu.profile`) replace the cost model's durations, so the bound holds for the
cost model only.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from npuir.analysis.core_limits import CoreLimits, engines_used, limit_has_no_effect
from npuir.analysis.dependence import DependenceGraph
from npuir.analysis.partition import with_collective_chain
from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu import timing
from npuir.backends.npu.cost import OpWork, op_work, parallelism, runs_without_task
from npuir.backends.npu.hardware import Hardware
from npuir.diagnostics import DiagnosticError
from npuir.dialects import coreset
from npuir.dialects.npu import CORE_ENGINES, CommMode, NpuOp
from npuir.schedule.core_chain import ChainProblem, least_makespan
from npuir.schedule.core_check import holds_while_waiting
from npuir.schedule.limits import grid

__all__ = [
    "CROWDED_BUDGET",
    "ENERGETIC_BUDGET",
    "FULL_WIDTH_BUDGET",
    "FULL_WIDTH_CHOICES",
    "FULL_WIDTH_HOSTS",
    "FULL_WIDTH_OPS",
    "FULL_WIDTH_VISITS",
    "LAST_OP_BUDGET",
    "MOLDABLE_BUDGET",
    "STRUCTURE_BUDGET",
    "STRUCTURE_OPS",
    "WINDOW_PAIRS_OPS",
    "LowerBound",
    "heads_and_tails",
    "least_aiv_cores",
    "lower_bound",
    "lower_bound_ns",
    "program_bound",
    "serial_engines",
    "shortest_runs",
    "unlimited_engines",
]

MOLDABLE_BUDGET = 2_000_000
"""Most node, edge and option visits the moldable term (5) may make (about a second of
Python): it mixes in fewer paths to fit, and is skipped when even single paths do not, so
the bound stays about as cheap as reading the program (a 5k-op program is near the limit)."""

WINDOW_PAIRS_OPS = 400
"""Term 4 tries pairs of thresholds on engines of at most this many ops (quadratic)."""

ENERGETIC_BUDGET = 10_000_000
"""Most op-option-interval evaluations one energetic test (6) may make on one engine; an
engine above it is left out of the test."""

CROWDED_BUDGET = 3_000_000
"""Most node-and-edge visits bound 11 may make (quadratic in the program: every node's
ancestors and descendants); above it heads and tails stay longest paths (still valid)."""

_LAMBDA_STEPS = 16
"""Term 5 tries lambda = k / 16 for k = 1..15."""

_MIXED_PATHS = 24
"""Term 5 mixes up to 24 more paths into each single-path combination, budget allowing."""

LAST_OP_BUDGET = 3_000_000
"""Most node, edge and producer-pair visits bound 12 may make (one pass of bound 7 per op
that may end last on an engine); beyond it the engines left are left out (still valid)."""

STRUCTURE_OPS = 6
"""Bound 13 is made on programs of at most this many compute ops (one function, unlowered)."""

STRUCTURE_BUDGET = 200_000
"""Most node visits bound 13 may make over all the stream structures it weighs (about a
second of Python); a program whose structures would take more is left out (still valid)."""
FULL_WIDTH_OPS = 24
"""Bound 14 is tried on engines with at most this many ops on which it reasons."""

FULL_WIDTH_CHOICES = 10
"""... and at most this many full-width ops among them (each doubles its search)."""

FULL_WIDTH_BUDGET = 3_000_000
"""Most node and edge visits bound 14's paths between full-width ops may make."""

FULL_WIDTH_HOSTS = 2
"""Bound 14 takes a core to host each of this many narrow ops, those with the longest blocks."""

FULL_WIDTH_VISITS = 40_000
"""Most ops bound 14's searches place per engine; beyond it the engine is left out."""

_JOIN_FANIN = 32
"""Term 7 weighs the stream choices of a node's producers up to this many (O(k^2))."""

_RETURN_FANIN = 512
"""... and of the ops the return joins, up to this many."""

_KEEP_OUT_ROUNDS = 4
"""Term 6 tightens releases and deadlines by compulsory parts at most this many times over
(each round costs ops x ops; stopping early only leaves the windows wider)."""

_ENERGETIC_PRECISION = 10_000
"""Term 6 stops refining once its impossible and possible M are within 1/10000 of each other."""


@dataclass
class LowerBound:
    """The bounds of the module docstring (ns)."""

    critical_path_ns: int
    engine_ns: dict[str, float]
    """Per engine: its arithmetic over its cores (bound 2)."""
    window_ns: dict[str, float] = field(default_factory=dict[str, float])
    """Per engine: earliest start + arithmetic over cores + shortest tail (bound 3)."""
    core_window_ns: dict[str, int] = field(default_factory=dict[str, int])
    """Per engine: the best core-time window (bound 4)."""
    moldable_ns: dict[str, int] = field(default_factory=dict[str, int])
    """Per engine: the best launch/path trade-off (bound 5); empty when over budget."""
    energetic_ns: int | None = None
    """Bound 6; None when over `ENERGETIC_BUDGET` or when it did not beat the others."""
    joins_ns: int = 0
    """Bound 7: the critical path with the events its joins need."""
    last_op_ns: dict[str, int] = field(default_factory=dict[str, int])
    """Per engine: bound 7 after the engine's last op (bound 12), where it beat the others."""
    structure_ns: int | None = None
    """Bound 13 (every stream structure of a small program, its records counted); None when
    the program is too large for it or it did not beat the others."""
    full_width_ns: dict[str, int] = field(default_factory=dict[str, int])
    """Per engine: one core's chain of blocks (bound 14), where it beat the others."""

    @property
    def plain_ns(self) -> float:
        """Bounds 1 and 2 only: the bound before the window term."""
        return max(self.critical_path_ns, *self.engine_ns.values(), 0)

    @property
    def arithmetic_ns(self) -> float:
        """Bounds 1-3: critical path and engine arithmetic, npuir's bound before bound 4."""
        return max(self.plain_ns, *self.window_ns.values(), 0)

    @property
    def ns(self) -> float:
        """Every bound: the tightest."""
        return max(
            self.arithmetic_ns,
            *self.core_window_ns.values(),
            *self.moldable_ns.values(),
            self.energetic_ns or 0,
            self.joins_ns,
            *self.last_op_ns.values(),
            self.structure_ns or 0,
            *self.full_width_ns.values(),
        )


_Piece = tuple[int, int]
"""(cores, ns): cores an op holds without a break for at least that long."""


@dataclass(frozen=True, slots=True)
class _Option:
    """One way an op may run (a blockDim, or a core count): its least duration, its least
    core-nanoseconds, and the rigid pieces those are made of (module docstring)."""

    energy: int
    duration: int
    pieces: tuple[_Piece, ...]
    after_launch: int
    """The core-nanoseconds of `energy` held after the op's launch is over (10)."""


@dataclass(frozen=True, eq=False)
class _Options:
    """How one op may run: the engine whose cores it holds and its options.

    Options are reduced to those no other beats in both energy and duration (a dominated
    option never attains any minimum the bounds take), fewest cores first.  Shared by the
    ops of one signature and compared by identity."""

    pool: str | None
    options: tuple[_Option, ...]
    shortest: int = field(init=False)
    """d(v): the least duration."""
    least_core_time: int = field(init=False)
    """a(v): the least energy."""
    least_after_launch: int = field(init=False)
    """q(v): the least core-time held after the launch (10)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "shortest", min(o.duration for o in self.options))
        object.__setattr__(self, "least_core_time", min(o.energy for o in self.options))
        object.__setattr__(self, "least_after_launch", min(o.after_launch for o in self.options))


def _held(cores: int, ns: int, launch: int) -> _Option:
    """`cores` held together for `ns` (`launch` included): a hold-and-wait op's option."""
    return _Option(cores * ns, ns, ((cores, ns),), cores * (ns - launch))


def _options(
    op: NpuOp,
    work: OpWork,
    full_core_sync: bool,
    hw: Hardware,
    written: int | None = None,
    serial: bool = False,
) -> _Options:
    """Every way the simulator may run `work` (module docstring); with `written`, the
    count a limit the program writes gives it (bound 8); with `serial`, its engine runs
    one op at a time on every core (bound 9)."""
    if runs_without_task(op):
        return _Options(None, (_Option(0, 0, (), 0),))
    launch = timing.launch_cost(hw)
    if serial:
        total = hw.cores(work.engine)
        block = timing.block_ns(hw, work, total)
        return _Options(work.engine, (_held(total, launch + block, launch),))
    if work.engine == "comm":
        ns = timing.collective_task_ns(hw, work)
        # Cores do not change a collective's duration: the fewest it may hold dominate (8).
        return (
            _Options("vector", (_held(written or least_aiv_cores(hw), ns, launch),))
            if work.mode == CommMode.AIV
            else _Options(None, (_Option(0, ns, (), 0),))
        )
    par = max(1, parallelism(hw, work))
    total = hw.cores(work.engine)
    kept: list[_Option] = []
    if full_core_sync:
        for g in range(written or 1, (written or total) + 1):
            option = _held(g, timing.held_ns(hw, work, g, par), launch)
            if not kept or option.duration < kept[-1].duration:
                kept.append(option)
    else:
        least = most = min(written, par) if written is not None else None
        for blocks in range(least or 1, (most or par) + 1):
            block = timing.block_ns(hw, work, blocks)
            pieces = ((1, launch + block),) + (((blocks - 1, block),) if blocks > 1 else ())
            option = _Option(launch + blocks * block, launch + block, pieces, blocks * block)
            if not kept or option.duration < kept[-1].duration:
                kept.append(option)
    return _Options(work.engine, tuple(kept))


def _written_counts(prog: Program, hw: Hardware) -> dict[Operation, int]:
    """Per op, the count on the engine whose cores it takes that a limit the program writes
    gives it and every mode keeps (bound 8): an enclosing `coreset.limit` scope or the
    module's global limit, where seed 003's table lets the limit act.  Stream limits are
    left out (a mode may move the op to another stream), and so is everything in a
    program that is not inside a module."""
    ops = [op for n, op in enumerate(prog.ops) if prog.kind[n] is NodeKind.COMPUTE]
    module = ops[0].get_toplevel_object() if ops else None
    if not isinstance(module, ModuleOp):
        return {}
    try:
        limits = CoreLimits(module, hw).run()
    except DiagnosticError:
        return {}  # an ill-formed limit: the bound takes none (still valid)
    out: dict[Operation, int] = {}
    for op in ops:
        if not isinstance(op, NpuOp):
            continue
        for engine in engines_used(op):
            try:
                limit = limits.limit(op, engine)
            except KeyError:
                continue  # an op of a function the module does not define
            kept = isinstance(limit.source, coreset.LimitOp | ModuleOp)
            if kept and limit_has_no_effect(op, engine) is None:
                out[op] = max(1, min(limit.count, hw.cores(engine)))
    return out


def least_aiv_cores(hw: Hardware) -> int:
    """The fewest vector cores an aiv collective without a written limit holds in any
    mode's schedule (bound 8): the smallest count of `npuir.schedule.limits.grid`, the
    only counts auto's limit search gives an op that holds cores while it waits (one of
    another stream gets the rest, at least half the engine); no other mode limits one."""
    return min(grid(hw, "vector"))


def serial_engines(prog: Program, hw: Hardware) -> set[str]:
    """The engines bound 9 takes as running one op at a time on all their cores: no mode
    limits them and each of their ops asks for every core (module docstring)."""
    return unlimited_engines(prog, hw, narrow=False)


def unlimited_engines(prog: Program, hw: Hardware, narrow: bool = True) -> set[str]:
    """The engines no mode limits (bound 9's first two conditions): every ordinary op of
    them runs exactly ``min(par, C)`` blocks.  With `narrow` false, only those whose every
    op asks for every core (bound 9's serial engines)."""
    ops = [op for n, op in enumerate(prog.ops) if prog.kind[n] is NodeKind.COMPUTE]
    module = ops[0].get_toplevel_object() if ops else None
    if not isinstance(module, ModuleOp):
        return set()
    try:
        limits = CoreLimits(module, hw).run()
    except DiagnosticError:
        return set()
    engines = set(CORE_ENGINES)
    written = module.attributes.get(coreset.GLOBAL)
    for engine in CORE_ENGINES:
        if isinstance(written, coreset.CoresAttr) and written.count(engine) is not None:
            engines.discard(engine)
    for op in module.walk():
        if isinstance(op, coreset.StreamLimitOp):
            engines -= {e for e in CORE_ENGINES if op.limit(e) is not None}
        elif isinstance(op, coreset.LimitOp):
            engines -= {e for e in CORE_ENGINES if op.count(e) is not None}
    for op in ops:
        if not isinstance(op, NpuOp) or not engines:
            continue
        used = engines_used(op)
        if holds_while_waiting(op):
            engines -= set(used)  # a mode may limit this engine's ops (auto's limit search)
            continue
        if runs_without_task(op):
            continue
        for engine in used:
            try:
                configured = limits.configured(op, engine)
            except KeyError:
                configured = True  # not resolved: take it as limited
            below = parallelism(hw, op_work(op, hw)) < hw.cores(engine)
            if configured or (below and not narrow):
                engines.discard(engine)
    return engines


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _distinct(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` for a 1-d integer array (sorted, each value once), without the
    import of `numpy.ma` that `np.unique` makes on first use (10 ms of a tool's start)."""
    ordered = np.sort(values)
    if ordered.size == 0:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _energy(option: _Option) -> int:
    """An option's energy (bounds 4-5)."""
    return option.energy


def _after_launch(option: _Option) -> int:
    """An option's core-time after its launch (bound 10)."""
    return option.after_launch


@dataclass(frozen=True, eq=False)
class _Case:
    """One case of bound 13: a stream structure and a side for each record."""

    groups: list[list[int]]
    """The compute ops of each stream, in issue order."""
    group: dict[int, int]
    """Each compute op's stream (an index into `groups`)."""
    after: dict[int, int]
    """The op after each op on its stream, where there is one."""
    later: set[int]
    """The ops whose consumers elsewhere wait for a record after the op after them."""
    early: set[int]
    """The ops with a record right after them (before the op after them)."""
    consumers: list[list[int]]
    """Each node's compute consumers."""


class _Bounder:
    """One program's per-node options, paths and the terms computed from them."""

    def __init__(self, prog: Program, hw: Hardware, crowded: bool = True) -> None:
        self.prog = prog
        self.hw = hw
        n_nodes = len(prog)
        # A group's collectives run one after another (module docstring).
        self.deps = [[p for p, _ in deps] for deps in with_collective_chain(prog).deps]
        self.opts: list[_Options | None] = [None] * n_nodes
        self.shortest = [0] * n_nodes
        self.core_time = [0] * n_nodes
        self.after_launch = [0] * n_nodes
        self.arithmetic = [0.0] * n_nodes
        self.block = [-1] * n_nodes
        """Per node, the duration of one block of an ordinary op on an engine no mode limits
        (bound 14); -1 for the others."""
        self.full = [False] * n_nodes
        """Per node, whether it is such an op with a block for every core (bound 14)."""
        memo: dict[tuple[OpWork, bool, bool, int | None, bool], _Options] = {}
        written = _written_counts(prog, hw)
        unlimited = unlimited_engines(prog, hw)
        """Engines no mode limits: an ordinary op runs ``min(par, C)`` blocks (9)."""
        self.serial = serial_engines(prog, hw)
        """Bound 9's engines: every op of each runs alone on all its cores."""
        for n, op in enumerate(prog.ops):
            if prog.kind[n] is not NodeKind.COMPUTE or not isinstance(op, NpuOp):
                continue
            work = op_work(op, hw)
            accum = op.full_core_sync and work.engine != "comm"
            count = written.get(op)
            alone = work.engine in self.serial
            if count is None and not accum and work.engine in unlimited:
                count = hw.cores(work.engine)  # its only option: min(par, C) blocks (9)
            key = (work, accum, runs_without_task(op), count, alone)
            opts = memo.get(key)
            if opts is None:
                opts = memo[key] = _options(op, work, accum, hw, count, alone)
            self.opts[n] = opts
            self.shortest[n] = opts.shortest
            self.core_time[n] = opts.least_core_time
            self.after_launch[n] = opts.least_after_launch
            if (
                work.engine in unlimited
                and work.engine != "comm"
                and not accum
                and not runs_without_task(op)
            ):
                # Bound 14: its blocks' duration, and whether it runs one on every core.
                self.block[n] = opts.shortest - timing.launch_cost(hw)
                self.full[n] = parallelism(hw, work) >= hw.cores(work.engine)
            if work.engine != "comm" and work.flops:
                self.arithmetic[n] = timing.arithmetic_ns(hw, work)
        self.head = [0] * n_nodes  # longest path into n, n excluded
        for n in range(n_nodes):
            for p in self.deps[n]:
                self.head[n] = max(self.head[n], self.head[p] + self.shortest[p])
        self.tail = [0] * n_nodes  # longest path out of n, n excluded
        for n in range(n_nodes - 1, -1, -1):
            for p in self.deps[n]:
                self.tail[p] = max(self.tail[p], self.tail[n] + self.shortest[n])
        self.compute_nodes = [n for n in range(n_nodes) if prog.kind[n] is NodeKind.COMPUTE]
        self.by_pool: dict[str, list[int]] = {e: [] for e in CORE_ENGINES}
        for n, opts in enumerate(self.opts):
            if opts is not None and opts.pool is not None:
                self.by_pool[opts.pool].append(n)
        edges = sum(len(d) for d in self.deps)
        if crowded and n_nodes * (n_nodes + edges) <= CROWDED_BUDGET:
            self._crowded_heads()
            self._crowded_tails()

    def _crowd(self, members: list[tuple[int, int, int, int]], cores: int) -> int:
        """Bound 11 for one node and one engine: `members` are (threshold, energy, core-time
        after launch, gap) of the engine's ops before (or after) it, thresholds their heads
        (or tails), gaps their longest paths to (or from) it; the best window over the
        ops whose threshold is at least each value."""
        best = 0
        launch = timing.launch_cost(self.hw)
        members.sort(key=lambda m: -m[0])
        energy = after = 0
        gap = -1
        for i, (threshold, e, q, g) in enumerate(members):
            energy += e
            after += q
            gap = g if gap < 0 else min(gap, g)
            if i + 1 < len(members) and members[i + 1][0] == threshold:
                continue  # take every op at this threshold before measuring
            spread = max(_ceil_div(energy, cores), launch + _ceil_div(after, cores))
            best = max(best, threshold + spread + gap)
        return best

    def _crowded_heads(self) -> None:
        """Bound 11 on heads, in topological order (module docstring)."""
        n_nodes = len(self.prog)
        head, d = self.head, self.shortest
        for v in range(n_nodes):
            for p in self.deps[v]:
                head[v] = max(head[v], head[p] + d[p])
            # into[u]: the longest path from u's end to v's start (-1: not an ancestor).
            into = [-1] * (v + 1)
            into[v] = 0
            per_pool: dict[str, list[tuple[int, int, int, int]]] = {}
            for w in range(v, -1, -1):
                if into[w] < 0:
                    continue
                through = into[w] + (d[w] if w != v else 0)
                for p in self.deps[w]:
                    into[p] = max(into[p], through)
                opts = self.opts[w]
                if w != v and opts is not None and opts.pool is not None:
                    per_pool.setdefault(opts.pool, []).append(
                        (head[w], self.core_time[w], self.after_launch[w], into[w])
                    )
            for pool, members in per_pool.items():
                head[v] = max(head[v], self._crowd(members, self.hw.cores(pool)))

    def _crowded_tails(self) -> None:
        """Bound 11 on tails, in reverse topological order (module docstring)."""
        n_nodes = len(self.prog)
        tail, d = self.tail, self.shortest
        succs: list[list[int]] = [[] for _ in range(n_nodes)]
        for n in range(n_nodes):
            for p in self.deps[n]:
                succs[p].append(n)
        for u in range(n_nodes - 1, -1, -1):
            for w in succs[u]:
                tail[u] = max(tail[u], tail[w] + d[w])
            # after[w]: the longest path from u's end to w's start (-1: not a descendant).
            after = [-1] * n_nodes
            per_pool: dict[str, list[tuple[int, int, int, int]]] = {}
            for w in range(u + 1, n_nodes):
                for p in self.deps[w]:
                    if p == u:
                        after[w] = max(after[w], 0)
                    elif p > u and after[p] >= 0:
                        after[w] = max(after[w], after[p] + d[p])
                opts = self.opts[w]
                if after[w] >= 0 and opts is not None and opts.pool is not None:
                    per_pool.setdefault(opts.pool, []).append(
                        (tail[w], self.core_time[w], self.after_launch[w], after[w])
                    )
            for pool, members in per_pool.items():
                tail[u] = max(tail[u], self._crowd(members, self.hw.cores(pool)))

    def critical_path(self) -> int:
        return max((h + d for h, d in zip(self.head, self.shortest, strict=True)), default=0)

    def joins(self) -> int:
        """Bound 7: the critical path with a join's events (module docstring)."""
        n_nodes = len(self.prog)
        self.join_start = [0] * n_nodes
        """Per node, s(v) of bound 7 (kept for bound 12)."""
        self.join_finish = [0] * n_nodes
        """Per node, the least end bound 7 gives it: ``s(v) + d(v)``."""
        return self._join_pass(0, self.join_start, self.join_finish)

    def _join_pass(
        self, first: int, start: list[int], finish: list[int], raised: tuple[int, int] = (0, 0)
    ) -> int:
        """Bound 7's pass over the nodes from `first` on (the earlier ones' `start` and
        `finish` given), in place; `raised` (bound 12) is a start and an end that node
        `first` is known to reach.  The largest end among the nodes passed."""
        prog = self.prog
        record, wait = timing.record_cost(self.hw), timing.wait_cost(self.hw)
        end = 0
        for v in range(first, len(prog)):
            producers = set(self.deps[v])
            cap = _JOIN_FANIN
            if prog.kind[v] is NodeKind.RETURN:
                # The return joins the last op of every stream: every op before it.
                producers.update(n for n in self.compute_nodes if n < v)
                cap = _RETURN_FANIN
            begin = 0
            if producers:
                ends = {p: finish[p] for p in producers}
                plain = max(ends.values())
                joined = prog.kind[v] in (NodeKind.COMPUTE, NodeKind.RETURN) and all(
                    prog.kind[p] is NodeKind.COMPUTE for p in producers
                )
                if not joined or len(producers) > cap:
                    begin = plain
                else:
                    begin = max(plain, self._join(start, ends, record, wait))
            begin = max(begin, self.head[v])  # bound 11's heads are starts' bounds too
            done = begin + self.shortest[v]
            if v == first:
                begin = max(begin, raised[0])
                done = max(done, begin + self.shortest[v], raised[1])
            start[v], finish[v] = begin, done
            end = max(end, done)
        return end

    def _join(self, start: list[int], finish: dict[int, int], record: int, wait: int) -> int:
        """``min_j`` over the producers on the consumer's stream, as in bound 7: those
        with the j latest ends there (in series, after their starts), the others elsewhere
        (the latest of them recorded and waited for, the wait on the consumer's stream)."""
        ranked = sorted(finish, key=lambda p: -finish[p])
        best = finish[ranked[0]] + record + wait  # j = 0: no producer on the stream
        jobs: list[tuple[int, int]] = []  # (start, duration) of the first j, latest start first
        for j in range(1, len(ranked) + 1):
            p = ranked[j - 1]
            bisect.insort(jobs, (-start[p], self.shortest[p]))
            released = finish[ranked[j]] + record if j < len(ranked) else None
            serial, total = 0, 0
            waited = released is None  # the wait counted once its release is passed
            for neg_t, d in jobs:
                t = -neg_t
                if not waited and released is not None and released >= t:
                    serial = max(serial, released + wait + total)
                    total += wait
                    waited = True
                total += d
                serial = max(serial, t + total)
            if not waited and released is not None:
                serial = max(serial, released + wait + total)
            cross = released + wait if released is not None else 0
            best = min(best, max(cross, serial))
        return best

    # -- bound 12 -------------------------------------------------------------------------

    def engine_end(self, e: str, start: list[int] | None = None) -> int:
        """A least end for the op of engine `e` that ends last (bound 12): the windows of 4
        and 10 without a tail, over the ops whose head (or, for bound 13, least start in
        `start`) is at least each threshold."""
        head = self.head if start is None else start
        cores, launch = self.hw.cores(e), timing.launch_cost(self.hw)
        best = 0
        energy = after = 0
        order = sorted(self.by_pool[e], key=lambda n: -head[n])
        for i, n in enumerate(order):
            energy += self.core_time[n]
            after += self.after_launch[n]
            if i + 1 < len(order) and head[order[i + 1]] == head[n]:
                continue  # take every op at this threshold before measuring
            spread = max(_ceil_div(energy, cores), launch + _ceil_div(after, cores))
            best = max(best, head[n] + spread)
        return best

    def last_candidates(self, e: str) -> list[int]:
        """The ops of engine `e` that may end last among its ops: those without a
        descendant on `e` (a descendant holds cores and so ends later), fewest tail first."""
        n_nodes = len(self.prog)
        on_engine = [False] * n_nodes
        for n in self.by_pool[e]:
            on_engine[n] = True
        below = [False] * n_nodes  # some descendant is on e
        for v in range(n_nodes - 1, -1, -1):
            if on_engine[v] or below[v]:
                for p in self.deps[v]:
                    below[p] = True
        return sorted((n for n in self.by_pool[e] if not below[n]), key=lambda n: self.tail[n])

    def join_cost(self) -> int:
        """Node, edge and producer-pair visits of one pass of bound 7."""
        cost = 0
        for v in range(len(self.prog)):
            fanin = len(self.deps[v])
            if self.prog.kind[v] is NodeKind.RETURN:
                fanin = max(fanin, min(len(self.compute_nodes), _RETURN_FANIN))
            cost += 1 + fanin + (fanin * fanin if fanin <= _RETURN_FANIN else 0)
        return cost

    def last_on_engine(self, known: int) -> dict[str, int]:
        """Bound 12 per engine where it beats `known` (a valid bound): the least over the
        ops that may end last on the engine of bound 7 with that op's end raised to the
        engine's (`joins` must have run)."""
        out: dict[str, int] = {}
        per_pass = self.join_cost()
        spent = 0
        for e, nodes in self.by_pool.items():
            if not nodes:
                continue
            candidates = self.last_candidates(e)
            spent += len(candidates) * per_pass
            if spent > LAST_OP_BUDGET:
                break
            engine_end = self.engine_end(e)
            serial = e in self.serial
            prefix = [0]
            for f in self.join_finish:
                prefix.append(max(prefix[-1], f))
            least: int | None = None
            for x in candidates:
                # On a serial engine every op runs exactly d(v) (9): x starts that much
                # before the engine's end.
                lift = (engine_end - self.shortest[x] if serial else 0, engine_end)
                start, finish = list(self.join_start), list(self.join_finish)
                end = max(prefix[x], self._join_pass(x, start, finish, lift))
                least = end if least is None else min(least, end)
                if least <= known:
                    break
            if least is not None and least > known:
                out[e] = least
        return out

    # -- bound 13 -------------------------------------------------------------------------

    def stream_structures(self, known: int) -> int | None:
        """Bound 13 when it beats `known` (a valid bound), else None: the least over every
        stream structure of the program's compute ops, every choice of the default stream
        and every side of each record, of bound 7's pass and bound 12 with that structure
        known (module docstring)."""
        prog = self.prog
        nodes = self.compute_nodes
        if not nodes or len(nodes) > STRUCTURE_OPS:
            return None
        returns = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.RETURN]
        if (
            len(nodes) + len(returns) != len(prog)
            or len(returns) > 1
            or (returns and returns[0] != len(prog) - 1)
        ):
            return None
        below: list[set[int]] = [set() for _ in range(len(prog))]  # descendants
        for v in range(len(prog) - 1, -1, -1):
            for p in self.deps[v]:
                below[p] |= below[v] | {v}
        consumers: list[list[int]] = [[] for _ in range(len(prog))]
        for v in nodes:
            for p in self.deps[v]:
                consumers[p].append(v)
        spent = 0
        best: int | None = None
        for groups in _structures(nodes, below):
            group = {n: g for g, members in enumerate(groups) for n in members}
            after = {x: y for members in groups for x, y in itertools.pairwise(members)}
            # Ops with a consumer on another stream and an op after them on theirs: the
            # record the consumer waits for lies before that op or after it.
            sided = [x for x in after if any(group[c] != group[x] for c in consumers[x])]
            for late in range(1 << len(sided)):
                later = {x for i, x in enumerate(sided) if late >> i & 1}
                case = _Case(groups, group, after, later, set(sided) - later, consumers)
                spent += self._structure_cost()
                if spent > STRUCTURE_BUDGET:
                    return None
                value = self._structured(case, best)
                if value is None:
                    continue  # no race-free schedule has this structure and sides
                if value <= known:
                    return None  # the term cannot beat the others
                best = value if best is None else min(best, value)
        return best

    def _structure_cost(self) -> int:
        """Node visits of `_structured` on one case, at most: a pass, and one per op that
        may end last."""
        return len(self.prog) * (1 + len(self.compute_nodes))

    def _structured(self, case: _Case, best: int | None) -> int | None:
        """Bound 13 for one structure and one side of each record, the least over the
        default stream's choices: bound 7's pass with the structure known, and bound 12 on
        it; None when no schedule has it (its streams and records make a cycle).  Once
        the value reaches `best` (the least of other cases) it is not refined further."""
        prog = self.prog
        n_nodes = len(prog)
        succs: list[list[int]] = [[] for _ in range(n_nodes)]
        for v in range(n_nodes):
            for p in self.deps[v]:
                succs[p].append(v)
        for x, y in case.after.items():
            succs[x].append(y)  # first in, first out
        for x in case.later:
            for c in case.consumers[x]:
                if case.group[c] != case.group[x]:
                    succs[case.after[x]].append(c)  # c waits for a record after the next op
        order = _topological(succs)
        if order is None:
            return None
        order = [v for v in order if prog.kind[v] is NodeKind.COMPUTE]
        start, finish = self._structured_pass(order, case, None)
        # Per choice of the default stream (none, or one of the structure's): the end.
        ends = self._structured_ends(start, finish, case)
        # Bound 12 with the structure known: the engine's end from the starts above as
        # thresholds, and only the ops that reach no other op of the engine may end last.
        reach: list[set[int]] = [set() for _ in range(n_nodes)]
        for v in reversed(order):
            for w in succs[v]:
                reach[v] |= reach[w] | {w}
        for e, members in self.by_pool.items():
            if not members or (best is not None and min(ends) >= best):
                continue  # bound 12 only raises the ends: this case is not the least
            engine_end = self.engine_end(e, start)
            serial = e in self.serial
            least: list[int] | None = None
            for x in members:
                if any(y in reach[x] for y in members):
                    continue  # an op of the engine after it ends later
                lift = (x, engine_end - self.shortest[x] if serial else 0, engine_end)
                lifted = self._structured_ends(*self._structured_pass(order, case, lift), case)
                least = lifted if least is None else [min(a, b) for a, b in zip(least, lifted)]
            if least is not None:
                ends = [max(a, b) for a, b in zip(ends, least)]
        return min(ends)

    def _structured_pass(
        self, order: list[int], case: _Case, lift: tuple[int, int, int] | None
    ) -> tuple[list[int], list[int]]:
        """Per compute op, a least start and end in every schedule of the case (bound 13);
        `lift` is an op and a start and an end it is known to reach (bound 12)."""
        wait = timing.wait_cost(self.hw)
        n_nodes = len(self.prog)
        start, finish = [0] * n_nodes, [0] * n_nodes
        for v in order:
            members = case.groups[case.group[v]]
            floor, jobs = self._ahead(members[: members.index(v)], start, finish, case)
            waited = [
                self._released(p, finish, case)
                for p in self.deps[v]
                if case.group[p] != case.group[v]
            ]
            if waited:
                jobs.append((max(waited), wait))
                floor = max(floor, max(waited) + wait)
            begin = max(floor, self.head[v], _serial_end(jobs))
            done = begin + self.shortest[v]
            if lift is not None and lift[0] == v:
                begin = max(begin, lift[1])
                done = max(begin + self.shortest[v], lift[2])
            start[v], finish[v] = begin, done
        return start, finish

    def _structured_ends(self, start: list[int], finish: list[int], case: _Case) -> list[int]:
        """The least end of the case's schedules with the default stream on none of its
        streams, then on each: the latest op's end, or the return's start (bound 13)."""
        wait = timing.wait_cost(self.hw)
        latest = max(finish[n] for n in self.compute_nodes)
        head = max((self.head[n] for n in range(len(self.prog)) if n not in case.group), default=0)
        ends: list[int] = []
        for default in (None, *range(len(case.groups))):
            floor, jobs = (
                self._ahead(case.groups[default], start, finish, case)
                if default is not None
                else (0, [])
            )
            # The return waits, once at least, for the record after every other stream.
            waited = [
                self._released(members[-1], finish, case)
                for g, members in enumerate(case.groups)
                if g != default
            ]
            if waited:
                jobs.append((max(waited), wait))
                floor = max(floor, max(waited) + wait)
            ends.append(max(latest, head, floor, _serial_end(jobs)))
        return ends

    def _ahead(
        self, ahead: list[int], start: list[int], finish: list[int], case: _Case
    ) -> tuple[int, list[tuple[int, int]]]:
        """What the ops `ahead` of a node on its stream give it: a least start and the jobs
        its stream runs before it (the ops, released at their starts, and the records
        issued right after them)."""
        record = timing.record_cost(self.hw)
        floor = 0
        jobs: list[tuple[int, int]] = []
        for x in ahead:
            jobs.append((start[x], self.shortest[x]))
            floor = max(floor, finish[x])
            if x in case.early:
                jobs.append((finish[x], record))
                floor = max(floor, finish[x] + record)
        return floor, jobs

    def _released(self, x: int, finish: list[int], case: _Case) -> int:
        """When the record a consumer of `x` on another stream waits for has executed, at
        the earliest: after x, or after the op after it (bound 13's sides)."""
        return timing.record_end(self.hw, finish[case.after[x] if x in case.later else x])

    # -- bound 14 -------------------------------------------------------------------------

    def full_width(self, e: str, known: int) -> int | None:
        """Bound 14 on engine `e` where it beats `known` (a valid bound), else None: over
        every choice of which full-width ops run two blocks on one core, the largest least
        makespan of the core chains that choice implies (module docstring)."""
        ops = [n for n in self.by_pool[e] if self.block[n] >= 0]
        full = [j for j, n in enumerate(ops) if self.full[n]]
        if not full or len(ops) > FULL_WIDTH_OPS or len(full) > FULL_WIDTH_CHOICES:
            return None
        per_op = sum(len(d) for d in self.deps[ops[0] :]) + len(self.prog) - ops[0]
        if len(ops) * per_op > FULL_WIDTH_BUDGET:  # `_full_width_lags`' visits
            return None
        launch = timing.launch_cost(self.hw)
        block = [self.block[n] for n in ops]
        problem = ChainProblem(
            [self.head[n] for n in ops],
            [self.tail[n] for n in ops],
            block,
            self._full_width_lags(ops),
            launch,
        )
        # The narrow ops a chain is taken to host: those with the longest blocks (the max
        # over any of them is a bound; more hosts cost a search each).
        narrow = sorted(
            (j for j, n in enumerate(ops) if not self.full[n]), key=lambda j: -block[j]
        )[:FULL_WIDTH_HOSTS]
        budget = [FULL_WIDTH_VISITS]
        best: int | None = None
        for mask in range(1 << len(full)):
            twice = [j for i, j in enumerate(full) if mask >> i & 1]
            runs = [1 if self.full[n] else 0 for n in ops]
            least = [launch + b for b in block]
            for j in twice:
                runs[j] = 0
                least[j] = launch + 2 * block[j]
            cap = best if best is not None else 1 << 62
            value = least_makespan(problem, runs, least, cap, budget)
            for w in sorted(twice, key=lambda j: -block[j]) + narrow:
                if value >= cap:
                    break
                hosted = list(runs)
                hosted[w] = 2 if w in twice else 1
                value = max(value, least_makespan(problem, hosted, least, cap, budget))
            best = value if best is None else min(best, value)
            if best <= known or budget[0] <= 0:
                return None  # it cannot beat the others, or it ran out before the end
        return best if best is not None and best > known else None

    def _full_width_lags(self, full: list[int]) -> list[list[int]]:
        """Per pair of `full`'s ops, the longest d-weighted path from the first's end to the
        second's start (the ops between at their shortest runs), or -1 when the second does
        not depend on the first."""
        index = {n: i for i, n in enumerate(full)}
        lags = [[-1] * len(full) for _ in full]
        n_nodes = len(self.prog)
        for i, u in enumerate(full):
            dist = [-1] * n_nodes
            for x in range(u + 1, n_nodes):
                best = -1
                for p in self.deps[x]:
                    if p == u:
                        best = max(best, 0)
                    elif dist[p] >= 0:
                        best = max(best, dist[p] + self.shortest[p])
                dist[x] = best
                j = index.get(x)
                if j is not None and best >= 0:
                    lags[i][j] = best
        return lags

    def arithmetic_terms(self) -> tuple[dict[str, float], dict[str, float]]:
        """Bounds 2 and 3, per engine with arithmetic."""
        engine_ns: dict[str, float] = {}
        window_ns: dict[str, float] = {}
        for e, nodes in self.by_pool.items():
            busy = [n for n in nodes if self.arithmetic[n]]
            if not busy:
                continue
            work = sum(self.arithmetic[n] for n in busy) / self.hw.cores(e)
            engine_ns[e] = work
            first = min(self.head[n] for n in busy)
            last = min(self.tail[n] for n in busy)
            window_ns[e] = first + work + last
        return engine_ns, window_ns

    def core_window(self, e: str) -> tuple[int, list[int]]:
        """Bounds 4 and 10 for engine `e`, and the set S attaining the better."""
        cores = self.hw.cores(e)
        nodes = self.by_pool[e]
        best, best_set = 0, nodes
        # Bound 4: the energies in the window; bound 10: what is held after each launch, in
        # a window a launch shorter.
        for held, launch in ((self.core_time, 0), (self.after_launch, timing.launch_cost(self.hw))):
            for key, other in ((self.head, self.tail), (self.tail, self.head)):
                order = sorted(nodes, key=lambda n: -key[n])
                total = 0
                least_other = -1
                for i, n in enumerate(order):
                    total += held[n]
                    least_other = other[n] if least_other < 0 else min(least_other, other[n])
                    if i + 1 < len(order) and key[order[i + 1]] == key[n]:
                        continue  # take every op at this threshold before measuring
                    bound = key[n] + launch + _ceil_div(total, cores) + least_other
                    if bound > best:
                        best, best_set = bound, order[: i + 1]
            if len(nodes) > WINDOW_PAIRS_OPS:
                continue
            by_tail = sorted(nodes, key=lambda n: -self.tail[n])
            for low in sorted({self.head[n] for n in nodes}):
                total = 0
                for i, n in enumerate(by_tail):
                    if self.head[n] >= low:
                        total += held[n]
                    if total and (
                        i + 1 == len(by_tail) or self.tail[by_tail[i + 1]] < self.tail[n]
                    ):
                        bound = low + launch + _ceil_div(total, cores) + self.tail[n]
                        if bound > best:
                            cut = self.tail[n]
                            best = bound
                            best_set = [
                                m for m in nodes if self.head[m] >= low and self.tail[m] >= cut
                            ]
        return best, best_set

    def moldable(self, e: str, sets: list[list[int]], rounds: int, after: bool = False) -> int:
        """Bound 5 for engine `e` over the given sets S, each lambda with the best single
        path and then `rounds` more paths mixed in, in integers scaled by K * C * paths;
        with `after`, its window is bound 10's (the core-time held after the launches, in a
        window a launch shorter)."""
        cores = self.hw.cores(e)
        steps = _LAMBDA_STEPS
        n_nodes = len(self.prog)
        held = self.after_launch if after else self.core_time
        energy = _after_launch if after else _energy
        best = 0
        for members in sets:
            in_set = [False] * n_nodes
            for n in members:
                in_set[n] = True
            ends = min(self.head[n] for n in members) + min(self.tail[n] for n in members)
            ends += timing.launch_cost(self.hw) if after else 0
            least = sum(held[n] for n in members)
            for k in range(1, steps):
                # M * K * C >= k * (C * ends + sum_S g d) + (K - k) * C * len_P
                off_path = (steps - k) * cores
                pair: dict[_Options, int] = {}
                weight = [0] * n_nodes
                for n in range(n_nodes):
                    if in_set[n]:
                        opts = self.opts[n]
                        assert opts is not None
                        w = pair.get(opts)
                        if w is None:
                            w = pair[opts] = (
                                min(k * energy(o) + off_path * o.duration for o in opts.options)
                                - k * held[n]
                            )
                        weight[n] = w
                    else:
                        weight[n] = off_path * self.shortest[n]
                length, path = self._heaviest_path(weight)
                best = max(best, _ceil_div(k * (cores * ends + least) + length, steps * cores))
                if rounds:
                    mixed = self._mixed(in_set, k, ends, path, rounds, cores, energy)
                    best = max(best, mixed)
        return best

    def _mixed(
        self,
        in_set: list[bool],
        k: int,
        ends: int,
        first: list[int],
        rounds: int,
        cores: int,
        energy: Callable[[_Option], int],
    ) -> int:
        """Bound 5 with the path term an average of paths (Frank-Wolfe steps of 1/t).

        With c_v the share of the paths that pass through v, the combination is
        ``lambda (ends + sum_S g d / C) + (1 - lambda) sum_v c_v d_v``: an average of valid
        inequalities, so valid, and for each op the least over its options.  Each new path
        is the heaviest under the durations of the options attaining those least values
        (the gradient), which pulls the average toward the best mix."""
        steps = _LAMBDA_STEPS
        n_nodes = len(self.prog)
        off_path = (steps - k) * cores
        count = [0] * n_nodes
        for n in first:
            count[n] += 1
        # Each op of S as its options' (energy, duration) pairs, read once for every round.
        pairs: list[tuple[tuple[int, int], ...] | None] = [None] * n_nodes
        for n in range(n_nodes):
            opts = self.opts[n]
            if in_set[n] and opts is not None:
                pairs[n] = tuple((energy(o), o.duration) for o in opts.options)
        shortest = self.shortest
        best = 0
        for t in range(2, rounds + 2):
            # Gradient of the current mix (t - 1 paths), then the path along it: each op of
            # S at the duration of its first option of least k (t-1) g + (K-k) C c d.
            slope = [0] * n_nodes
            scale = k * (t - 1)
            for n in range(n_nodes):
                options = pairs[n]
                if options is None:
                    slope[n] = shortest[n]
                    continue
                c = off_path * count[n]
                least, duration = -1, 0
                for g, d in options:
                    value = scale * g + c * d
                    if least < 0 or value < least:
                        least, duration = value, d
                slope[n] = duration
            _, path = self._heaviest_path(slope)
            for n in path:
                count[n] += 1
            # M * K * C * t >= k t (C ends + sum_S g d) + (K - k) C sum_v count_v d_v
            total = k * t * cores * ends
            scale = k * t
            for n in range(n_nodes):
                options = pairs[n]
                if options is not None:
                    c = off_path * count[n]
                    total += min([scale * g + c * d for g, d in options])
                elif count[n]:
                    total += off_path * count[n] * shortest[n]
            best = max(best, _ceil_div(total, steps * cores * t))
        return best

    def _heaviest_path(self, weight: list[int]) -> tuple[int, list[int]]:
        """The dependence path of greatest total `weight`: its weight and its nodes."""
        n_nodes = len(weight)
        longest = [0] * n_nodes
        via = [-1] * n_nodes
        for n in range(n_nodes):
            into, best_p = 0, -1
            for p in self.deps[n]:
                if longest[p] > into:
                    into, best_p = longest[p], p
            longest[n] = into + weight[n]
            via[n] = best_p
        if not n_nodes:
            return 0, []
        end = max(range(n_nodes), key=longest.__getitem__)
        length = longest[end]
        path: list[int] = []
        while end >= 0:
            path.append(end)
            end = via[end]
        return length, path

    def moldable_cost(self, n_sets: int, rounds: int) -> int:
        """Node, edge and option visits of bound 5 with `rounds` mixed-in paths."""
        edges = sum(len(d) for d in self.deps)
        options = sum(len(o.options) for o in self.opts if o is not None)
        single = len(self.prog) + edges
        # Two windows: bound 4's and bound 10's.
        return 2 * n_sets * (_LAMBDA_STEPS - 1) * (single + rounds * 2 * (single + options))

    # -- bound 6 --------------------------------------------------------------------------

    def energetic_cost(self, e: str) -> int:
        """Op-option-interval evaluations of one test of bound 6 on engine `e`."""
        nodes = self.by_pool[e]
        points = 5 * len(nodes)
        options = 0
        for n in nodes:
            opts = self.opts[n]
            assert opts is not None
            options += sum(len(o.pieces) for o in opts.options)
        return points * points * options

    def _keep_out(
        self, nodes: list[int], release: np.ndarray, deadline: np.ndarray, cores: int
    ) -> bool:
        """Bound 6's compulsory parts (module docstring): tighten `release` and `deadline`
        in place around the intervals where an op holds every core in any schedule; False
        when some op is left no room."""
        launch = timing.launch_cost(self.hw)
        first = [0] * len(nodes)  # the shortest first piece over the op's options
        last = [0] * len(nodes)  # the shortest piece
        for i, n in enumerate(nodes):
            opts = self.opts[n]
            assert opts is not None
            first[i] = min(o.pieces[0][1] for o in opts.options)
            last[i] = min(p for o in opts.options for _, p in o.pieces)
        full: list[tuple[int, int, int, bool]] = []  # (node index, block, width, blocks)
        for i, n in enumerate(nodes):
            opts = self.opts[n]
            assert opts is not None
            if len(opts.options) != 1:
                continue
            pieces = opts.options[0].pieces
            if len(pieces) == 1 and pieces[0][0] == cores:
                full.append((i, pieces[0][1], pieces[0][1], False))
            elif len(pieces) == 2 and 1 + pieces[1][0] == cores:
                full.append((i, pieces[1][1], launch + pieces[1][1], True))
        for _ in range(_KEEP_OUT_ROUNDS):
            changed = False
            for i, block, span, blocks in full:
                r, dl = int(release[i]), int(deadline[i])
                if blocks and dl - r >= launch + 2 * block:
                    continue  # a core may run two of its blocks: no part is compulsory
                k1, k2 = dl - block, r + span
                if k1 >= k2:
                    continue
                for j in range(len(nodes)):
                    if j == i:
                        continue
                    if first[j] and release[j] < k2 and release[j] + first[j] > k1:
                        release[j] = k2  # its first block cannot end before k1
                        changed = True
                    if last[j] and deadline[j] > k1 and deadline[j] - last[j] < k2:
                        deadline[j] = k1  # none of its blocks can start after k2
                        changed = True
                    if release[j] + self.shortest[nodes[j]] > deadline[j]:
                        return False
            if not changed:
                break
        return True

    def _piece_ends(self, nodes: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Per op of `nodes` with one option of two pieces (an ordinary op on more than one
        block whose count no mode changes), its later blocks' earliest end after the op's
        release (launch and block) and their length; 0 and 0 for the others."""
        launch = timing.launch_cost(self.hw)
        early = np.zeros(len(nodes), dtype=np.int64)
        late = np.zeros(len(nodes), dtype=np.int64)
        for i, n in enumerate(nodes):
            opts = self.opts[n]
            assert opts is not None
            if len(opts.options) == 1 and len(opts.options[0].pieces) == 2:
                block = opts.options[0].pieces[1][1]
                early[i], late[i] = launch + block, block
        return early, late

    def impossible(self, makespan: int, engines: list[str]) -> bool:
        """Whether the energetic test (bound 6) on `engines` shows that no schedule ends by
        `makespan`."""
        launch = timing.launch_cost(self.hw)
        for e in engines:
            nodes = self.by_pool[e]
            release = np.array([self.head[n] for n in nodes], dtype=np.int64)
            deadline = makespan - np.array([self.tail[n] for n in nodes], dtype=np.int64)
            shortest = np.array([self.shortest[n] for n in nodes], dtype=np.int64)
            if np.any(release + shortest > deadline):
                return True
            if not self._keep_out(nodes, release, deadline, self.hw.cores(e)):
                return True
            # Where a piece ends when pushed earliest and starts when pushed latest: its
            # compulsory part's ends (an ordinary op's later blocks after its launch).
            early_end, late_start = self._piece_ends(nodes)
            inner = np.concatenate(
                [
                    release + shortest,
                    deadline - shortest,
                    release + early_end,
                    deadline - late_start,
                ]
            )
            t1 = _distinct(np.concatenate([release, inner]))[:, None]
            t2 = _distinct(np.concatenate([deadline, inner]))[None, :]
            width = np.maximum(t2 - t1, 0)
            energy = np.zeros(width.shape, dtype=np.int64)
            for i, n in enumerate(nodes):
                opts = self.opts[n]
                assert opts is not None
                r, dl = int(release[i]), int(deadline[i])
                least: np.ndarray | None = None
                for option in opts.options:
                    if r + option.duration > dl:
                        continue
                    used = np.zeros(width.shape, dtype=np.int64)
                    for i_piece, (cores, d) in enumerate(option.pieces):
                        # Pushed earliest (start r) or latest (end dl), the least overlap;
                        # an ordinary op's later blocks run after its launch (10).
                        early = r if i_piece == 0 else r + launch
                        overlap = np.minimum(
                            width,
                            np.minimum(d - np.maximum(t1 - early, 0), d - np.maximum(dl - t2, 0)),
                        )
                        used += cores * np.maximum(overlap, 0)
                    least = used if least is None else np.minimum(least, used)
                if least is None:
                    return True
                energy += least
            if np.any(energy > self.hw.cores(e) * width):
                return True
        return False

    def energetic(self, known: int, engines: list[str]) -> int | None:
        """Bound 6 on `engines` when it beats `known` (a valid bound), else None."""
        if not engines or not self.impossible(known, engines):
            return None
        proven = known  # the largest M shown impossible so far
        possible = known + max(1, known // 4)
        while self.impossible(possible, engines):
            proven = possible
            possible += max(1, possible // 4)
        while possible - proven > max(1, proven // _ENERGETIC_PRECISION):
            mid = (proven + possible) // 2
            if self.impossible(mid, engines):
                proven = mid
            else:
                possible = mid
        return proven + 1


def _serial_end(jobs: list[tuple[int, int]]) -> int:
    """The least end of `jobs` (release, duration) run one after another, each from its
    release on: ``max_t (t + sum of the durations released at t or later)``."""
    best, total = 0, 0
    for release, duration in sorted(jobs, reverse=True):
        total += duration
        best = max(best, release + total)
    return best


def _topological(succs: list[list[int]]) -> list[int] | None:
    """A topological order of the graph `succs`, or None when it has a cycle."""
    indegree = [0] * len(succs)
    for out in succs:
        for w in out:
            indegree[w] += 1
    ready = [v for v in range(len(succs)) if not indegree[v]]
    order: list[int] = []
    while ready:
        v = ready.pop()
        order.append(v)
        for w in succs[v]:
            indegree[w] -= 1
            if not indegree[w]:
                ready.append(w)
    return order if len(order) == len(succs) else None


def _structures(nodes: list[int], below: list[set[int]]) -> Iterator[list[list[int]]]:
    """Every stream structure of `nodes` (in topological order; `below` their
    descendants): a partition into streams and an issue order on each that puts no op
    before one of its ancestors (bound 13).  Each op goes first right after an ancestor
    that ends a stream, then on a stream of its own, then everywhere else: the structures
    of good schedules come early, where the search may stop (a chain on one stream, the
    branches beside it)."""
    groups: list[list[int]] = []

    def place(i: int) -> Iterator[list[list[int]]]:
        if i == len(nodes):
            yield [list(g) for g in groups]
            return
        n = nodes[i]
        places: list[tuple[int, int, int]] = []  # (preference, stream, position)
        for g, members in enumerate(groups):
            first = 1 + max((k for k, m in enumerate(members) if n in below[m]), default=-1)
            for at in range(first, len(members) + 1):
                chained = at == len(members) and n in below[members[-1]]
                places.append((0 if chained else 2, g, at))
        places.append((1, len(groups), 0))
        places.sort()
        for _, g, at in places:
            if g == len(groups):
                groups.append([n])
                yield from place(i + 1)
                groups.pop()
            else:
                groups[g].insert(at, n)
                yield from place(i + 1)
                groups[g].pop(at)

    yield from place(0)


def shortest_runs(prog: Program, hw: Hardware) -> list[int]:
    """Per node, ``d(v)`` of the module docstring: no run of it is shorter, whatever its
    blockDim, cores or core limit (0 for nodes that are not compute ops)."""
    return list(_Bounder(prog, hw, crowded=False).shortest)


def heads_and_tails(prog: Program, hw: Hardware) -> tuple[list[int], list[int]]:
    """Per node, ``h(v)`` and ``t(v)`` of the module docstring with bound 11: no schedule
    starts v before h(v) or ends it later than t(v) before its makespan."""
    b = _Bounder(prog, hw)
    return list(b.head), list(b.tail)


def program_bound(prog: Program, hw: Hardware, crowded: bool = True) -> LowerBound:
    """The bound of the module docstring for an un-partitioned (or lowered) program;
    `crowded=False` leaves bound 11 out (heads and tails stay longest paths)."""
    b = _Bounder(prog, hw, crowded)
    engine_ns, window_ns = b.arithmetic_terms()
    bound = LowerBound(b.critical_path(), engine_ns, window_ns, joins_ns=b.joins())
    sets: dict[str, list[list[int]]] = {}
    for e, nodes in b.by_pool.items():
        if nodes:
            bound.core_window_ns[e], best_set = b.core_window(e)
            sets[e] = [nodes] if best_set == nodes else [nodes, best_set]
    n_sets = sum(len(s) for s in sets.values())
    rounds = next(
        (r for r in range(_MIXED_PATHS, -1, -1) if b.moldable_cost(n_sets, r) <= MOLDABLE_BUDGET),
        None,
    )
    if rounds is not None:
        for e, candidates in sets.items():
            bound.moldable_ns[e] = max(
                b.moldable(e, candidates, rounds), b.moldable(e, candidates, rounds, after=True)
            )
    affordable = [e for e in sets if b.energetic_cost(e) <= ENERGETIC_BUDGET]
    bound.energetic_ns = b.energetic(int(bound.ns), affordable)
    bound.last_op_ns = b.last_on_engine(math.ceil(bound.ns))
    bound.structure_ns = b.stream_structures(math.ceil(bound.ns))
    for e in b.by_pool:
        found = b.full_width(e, math.ceil(bound.ns))
        if found is not None:
            bound.full_width_ns[e] = found
    return bound


def lower_bound(func: FuncOp, hw: Hardware) -> LowerBound:
    """The bound of the module docstring for one unlowered (or lowered) function."""
    return program_bound(DependenceGraph(func).run().prog, hw)


def lower_bound_ns(func: FuncOp, hw: Hardware) -> int:
    """`lower_bound(func, hw).ns`, rounded down to whole nanoseconds."""
    return int(lower_bound(func, hw).ns)
