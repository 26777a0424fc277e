"""Cost-aware planning shared by the passes: a layer between the backend and `transforms/`.

What lives here needs the device (hardware model, cost model or simulator) and is used by
more than one pass or by a pass and a tool, so no pass has to import another:

- `device`: which device a module targets (`device_of`);
- `events`: the minimal record/wait plan (`plan_events`) and the compact lowered program a
  search judges (`lowered_program`);
- `core_check`: the stream pair rule and hold-and-wait hazards (`CoreChecker`);
- `auto`: the search behind `stream-partition{mode=auto}` (`assign_auto`).
"""
