python3 -m pytest -q -p no:cacheprovider -p no:xdist tests/test_steps_hook.py tests/test_foundation.py -k "hook or step" 2>&1 | grep -E "passed|failed|assert|Error" | head -8
