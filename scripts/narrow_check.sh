set -u
export PYTHONUNBUFFERED=1 ZOO_CACHE_DIR=/tmp/zoo-cache
export PYTHONPATH=$PWD
bin/test -m gpu -q -rs -k "64x64pp" 2>&1 | tail -4
S=64x8192x4096,96x4096x4096,128x4096x4096,128x4096x11008,100x4096x4096
bin/zoo bench --shapes $S --json $OUT/narrow-auto.json 2>&1 | grep -E "^│|geometric" 
bin/zoo bench --shapes $S --config 64x128pp --json $OUT/narrow-64x128pp.json 2>&1 | grep -E "^│|geometric"
for suite in skinny small; do bin/zoo bench --suite $suite --json $OUT/bench-$suite.json 2>&1 | grep -E "^│|geometric"; done
bin/zoo bench --suite llm --eager --json $OUT/bench-llm-eager.json 2>&1 | grep -E "^│|geometric"
bin/zoo bench --suite square --json $OUT/bench-square.json 2>&1 | grep -E "^│|geometric"
