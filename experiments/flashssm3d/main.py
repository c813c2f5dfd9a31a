"""FlashSSM-3D experiment binary.

    python -m experiments.flashssm3d.main --config=experiments/flashssm3d/configs/default.py \
        --workdir=runs/flashssm3d
"""

from absl import app, flags
from ml_collections import config_flags

from experiments.flashssm3d import train

_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory (results.json, plots, checkpoints).")
config_flags.DEFINE_config_file("config", None, "Configuration file.", lock_config=True)
flags.mark_flags_as_required(["workdir", "config"])


def main(argv):
    del argv
    train.train_and_evaluate(flags.FLAGS.config, _WORKDIR.value)


if __name__ == "__main__":
    app.run(main)
