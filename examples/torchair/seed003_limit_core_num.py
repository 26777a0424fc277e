import torch
import npuir.torchair as torchair
from npuir.torchair.configs.compiler_config import CompilerConfig
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
    
    def forward(self, x):
        mm_result = torch.mm(x, x)
        with torchair.scope.limit_core_num(6, 12):
            add_result = torch.add(x, x)
        return mm_result, add_result

config = CompilerConfig()
config.mode = "reduce-overhead"
aclgraph_backend = torchair.get_npu_backend(compiler_config=config)
model = Model()
opt_model = torch.compile(model, backend=aclgraph_backend, fullgraph=True, dynamic=False)
x = torch.randn([3, 3])
model(x)
