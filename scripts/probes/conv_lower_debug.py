import copy, warnings, torch, zoo
from torch._inductor.utils import run_and_get_code
warnings.simplefilter("always")
torch.manual_seed(5)
ref = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 8, 1))
ref = ref.cuda().half().to(memory_format=torch.channels_last)
mine = copy.deepcopy(ref); print(zoo.nn.convert(mine))
x = torch.randn(2, 16, 12, 12, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
with torch.no_grad():
    got, codes = run_and_get_code(torch.compile(mine), x)
    want = ref(x)
code = codes[0]
print([l for l in code.splitlines() if "zoo" in l or "extern" in l])
print("rel", ((got.float() - want.float()).norm() / want.float().norm()).item(), got.stride(), want.stride())
