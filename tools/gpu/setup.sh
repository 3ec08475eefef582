# Sourced by the tools/gpu/*.sh device scripts: NumPy 2.4 and pytest-xdist from the carried
# wheels (.gpu/numpy, .gpu/xdist; ../shared/GPU.md says why), PYTHONPATH, and $out for logs.
if [[ ! -d /tmp/np/numpy ]]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/np .gpu/numpy/*.whl .gpu/xdist/*.whl
fi
export PYTHONPATH="/tmp/np:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-gpu_logs}"
mkdir -p "$out"
