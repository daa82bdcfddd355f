#!/bin/bash
# trc on a Slurm cluster: one array task per shard, then a merge job (docs/guides/ci.md).
#   sbatch docs/examples/slurm-check.sh                 # submits the array and the merge
# The array's size is the number of shards; each task gets its own cores and memory budget.
# cli/tests/ci_examples.rs checks that every `trc` subcommand and flag used here exists.
#SBATCH --job-name=trc-check
#SBATCH --array=1-16
#SBATCH --cpus-per-task=8
#SBATCH --mem=16G
#SBATCH --time=04:00:00
#SBATCH --output=out/slurm-%A_%a.log
set -euo pipefail
mkdir -p out
if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
  # Not in the array: submit it, and the merge to run when every task has ended.
  job=$(sbatch --parsable "$0")
  sbatch --dependency=afterany:"$job" --job-name=trc-merge --output=out/merge.log \
    --wrap "trc merge out/shard-*.json; trc merge --json out/shard-*.json > out/merged.json"
  exit 0
fi
n=$SLURM_ARRAY_TASK_COUNT
i=$SLURM_ARRAY_TASK_ID
# The work list: every bounds file × SACK mode × property group (with --reduce). A task that
# would need more than its memory stops cleanly with exit 3 (incomplete), which the merge
# reports as incomplete, never as a pass.
trc check --reduce --threads "$SLURM_CPUS_PER_TASK" --max-memory 15000 \
  --config configs/cubic-idle.toml --config configs/hystart-round.toml \
  --out "out/cex-$i" --shard "$i/$n" > "out/shard-$i.json" || test $? -le 1
