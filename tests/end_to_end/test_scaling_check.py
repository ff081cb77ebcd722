"""End-to-end: `phalanx scaling`'s prediction against a real training run on this machine, for one
configuration (bench/scaling_check.py does all of them, docs/BENCHMARKS.md): ResNet-20 at 32 images
per rank on two ranks of one host, MPI over shared memory. `bench calibrate` measures the layers,
the update, both ranks' steps and the all-reduce there; `scaling --profile --transport
shared_memory` predicts the step; 100 training steps measure it. The predicted median step must be
within 15% of the measured (the slowest rank's p50) and the exposed share (a rank's wait after its
backward, for the all-reduce and the other rank) within 5 points.

It times itself, so it runs alone. The machine is shared: a slow spell during only one of the two
measurements moves the comparison by itself, so a miss is measured again, up to three times, before
it fails. On a 2-core virtual machine whose neighbours were busy, the same pair of calibration and
run drifted by 15-20% from one minute to the next and 7 pairs of 16 missed; the drift is slow,
so the medians of pairs taken back to back missed as often, and only a later try helps."""

import os
import sys
import unittest

import e2e_common as e2e

sys.path.insert(0, os.path.join(e2e.SOURCE_DIR, "bench"))
import scaling_check  # noqa: E402  (bench/ is not a package)

STEP_BOUND = 0.15
EXPOSED_POINTS = 5.0


class ScalingCheckTest(unittest.TestCase):
    def test_the_predicted_step_of_two_ranks_matches_a_real_run(self):
        attempts = []
        for _ in range(3):
            rows = scaling_check.main([e2e.PHALANX, "--models", "resnet20", "--placements", "two-ranks",
                                       "--steps", "100", "--calibrate-iterations", "50"])
            self.assertEqual(len(rows), 1, rows)
            row = rows[0]
            attempts.append(row)
            if abs(row["step_error"]) <= STEP_BOUND and abs(row["exposed_points"]) <= EXPOSED_POINTS:
                break
        row = attempts[-1]
        described = "; ".join(f"predicted {a['predicted_step_ms']:.2f} ms against {a['measured_step_ms']:.2f} ms, "
                              f"exposed {100 * a['predicted_exposed_share']:.1f}% against "
                              f"{100 * a['measured_exposed_share']:.1f}%" for a in attempts)
        print(described)
        self.assertLessEqual(abs(row["step_error"]), STEP_BOUND, described)
        self.assertLessEqual(abs(row["exposed_points"]), EXPOSED_POINTS, described)
        # The prediction is the model's, not the measurement's echo: it holds an all-reduce and an update.
        self.assertGreater(row["predicted_exposed_share"], 0.0, described)


if __name__ == "__main__":
    e2e.main()
