#!/bin/bash
# One device call (H200): the probe of M split across a cluster of 2 against the table at M = 128 and 256
# (KB 1 and 2, plain and with PDL, PDL chains), the adoption rule (decode_adopt.py), and -- only where it
# adopts -- the sustained protocol at M = 128 and 256 with the adopted table. Outputs under $OUT as they come.
# Run from the repository root (or a copy of it): bash docs/results/decode_msplit_run.sh
set -u
O=${OUT:-/tmp/decode_msplit_out}
mkdir -p "$O"
export PYTHONPATH=$PWD
PY=${PY:-python3}
date -u; nvidia-smi -L; ls
timeout "${PROBE_S:-110}" $PY docs/results/decode_protocol.py probe --msplit --m 128 256 --out "$O/probe.txt" \
    --json "$O/probe.json.gz"
echo "probe rc $?"
$PY docs/results/decode_adopt.py "$O/probe.json.gz" | tee "$O/verdict.txt"
ARGS=$(sed -n 's/^table args: //p' "$O/verdict.txt")
if [ -n "$ARGS" ]; then
    # shellcheck disable=SC2086
    timeout "${PROTOCOL_S:-180}" $PY docs/results/decode_protocol.py protocol --m 128 256 --no-square $ARGS \
        --out "$O/gemm_protocol_decode_m256_h200.txt" --json "$O/gemm_protocol_decode_m256_h200.json.gz"
    echo "protocol rc $?"
else
    echo "nothing adopted: the protocol is not run"
fi
# with the time left (the call's limit less a margin): the GPU test of the new mode (M = 20, 100, 128, 256)
LEFT=$(( ${LIMIT_S:-320} - SECONDS ))
if [ "$LEFT" -gt 30 ]; then
    timeout "$LEFT" $PY -m pytest -q -p no:cacheprovider tests/test_gemm_decode.py -k m_split_clusters_are_correct \
        2>&1 | tail -5 | tee "$O/pytest_msplit.txt"
fi
date -u
