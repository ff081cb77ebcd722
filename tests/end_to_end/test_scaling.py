"""End-to-end: `phalanx scaling` on a config (its dataset's image shape read from the file, and given on
the command line): the bucket schedule, ring and tree times, the summary fields, a node sweep, and a
malformed or incomplete fabric file refused with exit 2 naming the file and the field."""

import json
import os
import statistics
import subprocess
import sys
import unittest

import e2e_common as e2e


def setUpModule():
    global WORK, CONFIG, DATA
    WORK = e2e.work_dir("scaling")
    DATA = os.path.join(WORK, "synth32.h5")
    made = e2e.phalanx("data", "synth", "-o", DATA, "--train", 64, "--test", 16, "--height", 32, "--width", 32,
                       "--channels", 3)
    assert made.returncode == 0, made.describe()
    CONFIG = os.path.join(WORK, "resnet20.yaml")
    with open(os.path.join(e2e.SOURCE_DIR, "configs", "resnet20_synth.yaml")) as source:
        text = source.read().replace("datasets/synth32.h5", DATA)
    with open(CONFIG, "w") as config:
        config.write(text)


def scaling(*args, timeout=300):
    return e2e.phalanx("scaling", CONFIG, *args, timeout=timeout)


def scaling_with_a_table(*args, timeout=300):
    """`phalanx scaling` without the config: args give --layers."""
    return e2e.phalanx("scaling", *args, timeout=timeout)


ONE_LAYER = {"model": "m", "layers": [{"name": "a", "parameters": 10, "multiply_adds": 10}]}


def one_layer_profile(forward_seconds, backward_seconds):
    """A profile of ONE_LAYER's model as `bench calibrate` writes one, of the fields `scaling` reads."""
    return {"batch_size": 32, "optimizer_seconds": 0, "ranks": [{"step_seconds": [0.01, 0.011]}],
            "layers": [{"name": "a", "forward_seconds": forward_seconds, "backward_seconds": backward_seconds}]}


class ScalingCommandTest(unittest.TestCase):
    def test_prints_the_bucket_schedule_and_the_summary(self):
        result = scaling("--nodes", 4, "--gpus-per-node", 4, "--fabric", "roce-25g", "--images-per-second", 2000)
        self.assertEqual(result.returncode, 0, result.describe())
        for field in ("bucket schedule", "ring ms", "tree ms", "ready", "exposed ms", "exposed %", "images/s",
                      "efficiency", "272474 parameters", "Sergeev & Del Balso 2018", "MiB (phalanx's)\n"):
            self.assertIn(field, result.stdout, result.describe())
        summary = result.stdout.strip().splitlines()[-1].split()
        self.assertEqual(summary[:2], ["4", "16"], result.describe())
        self.assertTrue(summary[-1].endswith("%"), result.describe())

    def test_json_prediction_is_consistent_and_a_sweep_gives_one_row_per_node_count(self):
        result = scaling("--gpus-per-node", 8, "--fabric", "ib-4x100g", "--images-per-second", 500, "--json",
                         "--sweep-nodes", "1,2,4", "--set", "model.preset=resnet50", "--sample-shape", "224x224x3",
                         "--classes", 1000, "--batch-size", 32)
        self.assertEqual(result.returncode, 0, result.describe())
        output = json.loads(result.stdout)
        self.assertEqual(output["model"], "resnet50")
        self.assertEqual(output["parameters"], 25557032)  # torchvision's resnet50
        predictions = output["predictions"]
        self.assertEqual([p["ranks"] for p in predictions], [8, 16, 32])
        for prediction in predictions:
            step = prediction["step_seconds"]
            compute = prediction["forward_seconds"] + prediction["backward_seconds"]
            self.assertAlmostEqual(compute, 32 / 500, places=9)
            self.assertAlmostEqual(prediction["exposed_seconds"], step - compute, places=9)
            self.assertAlmostEqual(prediction["efficiency"], compute / step, places=9)
            self.assertAlmostEqual(prediction["images_per_second"], 32 * prediction["ranks"] / step, places=6)
            buckets = prediction["buckets"]
            self.assertEqual(sum(b["end"] - b["begin"] for b in buckets), output["gradient_elements"])
            for earlier, later in zip(buckets, buckets[1:]):
                self.assertGreaterEqual(later["start_seconds"], earlier["finish_seconds"] - 1e-12)
                self.assertGreaterEqual(later["ready_seconds"], earlier["ready_seconds"])
        # Off the node, the network is the bottleneck: more nodes cannot expose less.
        self.assertLessEqual(predictions[1]["efficiency"], predictions[0]["efficiency"])
        self.assertEqual(output["nccl_algorithms"], "ring,tree")
        self.assertEqual(output["buckets_as"], "phalanx")
        self.assertIn("compute capability 7.0", output["fabric_source"])

    def test_horovods_buckets_hold_whole_tensors_ready_at_its_cycles(self):
        args = ("--nodes", 4, "--gpus-per-node", 4, "--fabric", "roce-25g", "--images-per-second", 2000, "--json",
                "--bucket-mb", 0.5)
        flat = scaling(*args)
        horovod = scaling(*args, "--buckets-as", "horovod", "--fusion-cycle-ms", 2)
        self.assertEqual(flat.returncode, 0, flat.describe())
        self.assertEqual(horovod.returncode, 0, horovod.describe())
        output = json.loads(horovod.stdout)
        self.assertEqual(output["buckets_as"], "horovod")
        self.assertAlmostEqual(output["fusion_cycle_seconds"], 0.002)
        buckets = output["predictions"][0]["buckets"]
        self.assertEqual(sum(b["end"] - b["begin"] for b in buckets), output["gradient_elements"])
        for bucket in buckets:  # ready at a 2 ms cycle
            cycles = bucket["ready_seconds"] / 0.002
            self.assertAlmostEqual(cycles, round(cycles), places=6)
        # resnet20's layers are far below 0.5 MiB; phalanx cuts the buffer into 0.5 MiB buckets across
        # layers, where Horovod fuses whole ones: the cuts differ.
        flat_ranges = [(b["begin"], b["end"]) for b in json.loads(flat.stdout)["predictions"][0]["buckets"]]
        self.assertNotEqual(flat_ranges, [(b["begin"], b["end"]) for b in buckets])

    def test_the_published_studies_are_predicted_with_vgg16_the_worst(self):
        """bench/scaling_published.py's table (docs/BENCHMARKS.md): every study's row prints, and --check
        fails unless VGG-16 is predicted the worst, as published."""
        script = os.path.join(e2e.SOURCE_DIR, "bench", "scaling_published.py")
        result = subprocess.run([sys.executable, script, e2e.PHALANX, "--check"], capture_output=True, text=True,
                                timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        checked, _, small_scale = result.stdout.partition("The same studies at a few GPUs")

        def rows(text):
            return [line.split() for line in text.splitlines() if line.split()[:1] in
                    (["inception_v3"], ["resnet101"], ["vgg16"], ["resnet50"])]

        self.assertEqual(len(rows(checked)), 8, result.stdout)
        self.assertEqual(len(rows(small_scale)), 5, result.stdout)
        self.assertIn("VGG-16 predicted the worst: yes", result.stdout)
        # The points each row lies off the published figure, as docs/BENCHMARKS.md quotes them: a
        # change of the model that moves one must update that table.
        points = [float(row[9]) for row in rows(checked)]  # model, GPUs, fabric, NCCL, buckets, img/s, ...
        self.assertEqual(points, [9.1, 8.9, 9.2, 9.0, 6.6, 9.3, 3.5, 6.4], result.stdout)
        self.assertEqual([float(row[9]) for row in rows(small_scale)], [5.4, 8.0, 9.0, 2.7, 3.5], result.stdout)

    def test_rings_only_use_the_ring_for_every_bucket_where_trees_take_some(self):
        args = ("--nodes", 64, "--gpus-per-node", 4, "--fabric", "roce-25g", "--images-per-second", 2000, "--json")
        both = scaling(*args)
        rings = scaling(*args, "--nccl-algo", "ring")
        self.assertEqual(both.returncode, 0, both.describe())
        self.assertEqual(rings.returncode, 0, rings.describe())
        both_buckets = json.loads(both.stdout)["predictions"][0]["buckets"]
        ring_output = json.loads(rings.stdout)
        self.assertEqual(ring_output["nccl_algorithms"], "ring")
        ring_buckets = ring_output["predictions"][0]["buckets"]
        # resnet20's 1 MiB first bucket over 256 GPUs is latency-bound: the tree takes it.
        self.assertIn("tree", [b["chosen"] for b in both_buckets])
        self.assertEqual({b["chosen"] for b in ring_buckets}, {"ring"})
        self.assertGreaterEqual(json.loads(rings.stdout)["predictions"][0]["step_seconds"],
                                json.loads(both.stdout)["predictions"][0]["step_seconds"])
        for option in (("--nccl-algo", "ring"), ("--buckets-as", "horovod"), ("--buckets-as", "ddp")):
            refused = scaling("--transport", "shared_memory", "--profile", "p.json", *option)
            self.assertEqual(refused.returncode, 2, refused.describe())
            self.assertIn(option[0], refused.stderr, refused.describe())

    def test_a_bad_fabric_file_is_refused_naming_the_file_and_the_field(self):
        cases = {
            "missing.json": ('{"intra_node_link": "nvlink", "network_gbit_per_second_per_node": 100}',
                             "intra_node_gbytes_per_second"),
            "malformed.json": ('{"intra_node_link": "nvlink", ', "not valid JSON"),
            "negative.json": ('{"intra_node_link": "pcie", "intra_node_gbytes_per_second": -3}',
                              "intra_node_gbytes_per_second"),
        }
        for name, (text, field) in cases.items():
            path = os.path.join(WORK, name)
            with open(path, "w") as file:
                file.write(text)
            result = scaling("--nodes", 2, "--fabric", path, "--images-per-second", 100)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertIn(path, result.stderr, result.describe())
            self.assertIn(field, result.stderr, result.describe())
            self.assertEqual(result.stdout, "", result.describe())
        # Two nodes on a fabric without a network.
        result = scaling("--nodes", 2, "--fabric", "nvlink-h100", "--images-per-second", 100)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("no network", result.stderr, result.describe())


class BadInputTest(unittest.TestCase):
    """Each bad value: exit 2, one line naming the option (or the file and the field), nothing on stdout;
    before, these crashed (exit 1), hung, or printed nan, inf and negative ranks with exit 0."""

    def refused(self, args, words, command=scaling, timeout=60):
        result = command(*args, timeout=timeout)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertEqual(result.stdout, "", result.describe())
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.describe())
        for word in words:
            self.assertIn(word, result.stderr, result.describe())

    def write(self, name, text):
        path = os.path.join(WORK, name)
        with open(path, "w") as file:
            file.write(text)
        return path

    def test_command_line_values_out_of_range_are_refused_naming_the_option(self):
        fabric = ("--fabric", "roce-25g")
        for args, words in (
                (("--images-per-second", "inf"), ["--images-per-second", "finite"]),
                (("--images-per-second", "1e-320"), ["--images-per-second"]),
                (("--images-per-second", -5), ["--images-per-second", "finite"]),
                (("--images-per-second", "nan"), ["--images-per-second", "finite"]),
                (("--images-per-second", 100, "--bucket-mb", -5), ["--bucket-mb"]),
                (("--images-per-second", 100, "--bucket-mb", "nan"), ["--bucket-mb"]),
                (("--images-per-second", 100, "--bucket-mb", "1e30"), ["--bucket-mb"]),
                (("--images-per-second", 100, "--bucket-mb", "inf"), ["--bucket-mb"]),
                (("--images-per-second", 100, "--bucket-mb", "1e-9"), ["--bucket-mb", "buckets"]),
                (("--images-per-second", 100, "--batch-size", 0), ["--batch-size"]),
                (("--images-per-second", 100, "--nodes", 65536, "--gpus-per-node", 32768),
                 ["--gpus-per-node"]),
                (("--images-per-second", 100, "--nodes", 65536, "--gpus-per-node", 32),
                 ["--nodes", "2097152"]),
                (("--images-per-second", 100, "--sweep-nodes", "1,2000000"), ["--sweep-nodes", "2000000"]),
                # --nodes beside --sweep-nodes was dropped unread (a --nodes 0 passed).
                (("--images-per-second", 100, "--nodes", 0, "--sweep-nodes", "1,2"), ["--nodes", "--sweep-nodes"]),
                # The dataset's classes are the default; a negative count was taken as a layer's width.
                (("--images-per-second", 100, "--classes", -5), ["--classes", "-5"]),
                (("--images-per-second", 100, "--nccl-algo", "nvls"), ["--nccl-algo", "nvls"]),
                (("--images-per-second", 100, "--nccl-algo", "ring,"), ["--nccl-algo", "ring,"]),
                (("--images-per-second", 100, "--buckets-as", "deepspeed"), ["--buckets-as", "deepspeed"]),
                (("--images-per-second", 100, "--nccl-algo", ""), ["--nccl-algo"]),
                (("--images-per-second", 100, "--fusion-cycle-ms", 2), ["--fusion-cycle-ms", "horovod"]),
                (("--images-per-second", 100, "--buckets-as", "horovod", "--fusion-cycle-ms", 0),
                 ["--fusion-cycle-ms"]),
                (("--images-per-second", 100, "--buckets-as", "horovod", "--fusion-cycle-ms", "nan"),
                 ["--fusion-cycle-ms"])):
            with self.subTest(args=args):
                self.refused((*fabric, *args), words)

    def test_bad_files_are_refused_naming_the_file_and_the_field(self):
        overflow = self.write("overflow-fabric.json", '{"intra_node_link": "pcie", '
                              '"intra_node_gbytes_per_second": 12, "network_gbit_per_second_per_node": 1e400}')
        denormal = self.write("denormal-fabric.json",
                              '{"intra_node_link": "pcie", "intra_node_gbytes_per_second": 1e-320}')
        self.refused(("--nodes", 2, "--fabric", overflow, "--images-per-second", 100),
                     [overflow, "not valid JSON"])
        self.refused(("--fabric", denormal, "--images-per-second", 100),
                     [denormal, "intra_node_gbytes_per_second"])
        self.refused(("--fabric", WORK, "--images-per-second", 100), [WORK, "not a regular file"])
        fifo = os.path.join(WORK, "fabric-fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        self.refused(("--fabric", fifo, "--images-per-second", 100), [fifo, "not a regular file"], timeout=20)
        loop = os.path.join(WORK, "fabric-loop")
        if not os.path.lexists(loop):
            os.symlink("fabric-loop", loop)
        self.refused(("--fabric", loop, "--images-per-second", 100), ["--fabric " + loop, "symbolic links"])
        layers = lambda text: ("--layers", self.write("layers-bad.json",
                                                      '{"model": "m", "layers": [' + text + ']}'))
        for text, field in (('{"name": "a", "parameters": 2.5, "multiply_adds": 1000}', "layers[0].parameters"),
                            ('{"name": "a", "parameters": 1e19, "multiply_adds": 1000}', "layers[0].parameters"),
                            ('{"name": "a", "parameters": 1e17, "multiply_adds": 1000}', "layers[0].parameters"),
                            ('{"name": "a", "parameters": 1000, "multiply_adds": 9e18}', "layers[0].multiply_adds")):
            with self.subTest(layers=text):
                self.refused((*layers(text), "--batch-size", 32, "--fabric", "roce-25g",
                              "--images-per-second", 100), ["layers-bad.json", field], command=scaling_with_a_table)
        table = ("--layers", self.write("layers-one.json", json.dumps(ONE_LAYER)), "--batch-size", 32)
        profile_of = lambda **fields: json.dumps({**one_layer_profile(0.001, 0.002), **fields})
        shared_memory = {"name": "shared_memory", "ranks": 2.7, "latency_seconds": 0, "seconds_per_byte": 1e-9}
        for name, text, field in (
                ("profile-zero.json", json.dumps(one_layer_profile(0, 0)), "no compute"),
                ("profile-batch.json", profile_of(batch_size=1e-310), "batch_size"),
                ("profile-ranks.json", profile_of(transports=[shared_memory]), "transports[0].ranks")):
            profile = self.write(name, text)
            transport = (("--transport", "shared_memory", "--gpus-per-node", 2) if "ranks" in name
                         else ("--fabric", "roce-25g"))
            with self.subTest(profile=name):
                self.refused((*table, "--profile", profile, *transport), [profile, field],
                             command=scaling_with_a_table)

    def test_a_straggler_is_never_negative(self):
        profile = one_layer_profile(0.001, 0.002)
        profile["ranks"] = [{"step_seconds": [0.01, 0.01]}, {"step_seconds": [0.01, 0.1]}]
        result = scaling_with_a_table("--layers", self.write("layers-straggle.json", json.dumps(ONE_LAYER)),
                                      "--batch-size", 32, "--profile", self.write("straggle.json", json.dumps(profile)),
                                      "--fabric", "roce-25g", "--json", "--sweep-nodes", "1,2,3,4,5")
        self.assertEqual(result.returncode, 0, result.describe())
        for prediction in json.loads(result.stdout)["predictions"]:
            self.assertGreaterEqual(prediction["straggler_seconds"], 0, prediction)
            self.assertGreaterEqual(prediction["exposed_seconds"], prediction["straggler_seconds"], prediction)

    def test_calibrate_refuses_sizes_it_cannot_fit_and_a_bad_batch(self):
        output = os.path.join(WORK, "never-written.json")

        def calibrate(*args, timeout):
            return e2e.phalanx("bench", "calibrate", CONFIG, "--output", output, *args, timeout=timeout)

        for args, words in ((("--max-bytes", 9223372036854775808), ["--max-bytes"]),
                            (("--min-bytes", 4096, "--max-bytes", 8000), ["--max-bytes", "twice"]),
                            (("--batch-size", -5), ["--batch-size"]),
                            (("--batch-size", 0), ["--batch-size"]),
                            (("--batch-size", 2000000000), ["--batch-size", "16777216"]),
                            (("--classes", -5), ["--classes", "-5"])):
            with self.subTest(args=args):
                self.refused(args, words, command=calibrate, timeout=30)
                self.assertFalse(os.path.exists(output))


class CalibrateTest(unittest.TestCase):
    def test_calibrate_writes_a_profile_that_scaling_predicts_from(self):
        profile = os.path.join(WORK, "profile.json")
        result = e2e.phalanx("bench", "calibrate", CONFIG, "--iterations", 3, "--batch-size", 4, "--max-bytes", 65536,
                             "--output", profile)
        self.assertEqual(result.returncode, 0, result.describe())
        with open(profile) as file:
            written = json.load(file)
        self.assertEqual(written["format"], "phalanx-profile")
        self.assertEqual(written["batch_size"], 4)
        self.assertEqual(written["layers"][0]["name"], "conv1")
        self.assertEqual(written["layers"][-1]["name"], "fc")
        # The layers are scaled to the whole steps' backward; the update and every rank's steps are there.
        self.assertAlmostEqual(sum(layer["backward_seconds"] for layer in written["layers"]),
                               written["backward_seconds"], places=9)
        self.assertGreater(written["backward_seconds"], 0)
        self.assertGreater(written["optimizer_seconds"], 0)
        self.assertIn(written["precision"], ("fp32", "bf16"))
        self.assertEqual([rank["rank"] for rank in written["ranks"]], [0])
        self.assertEqual(len(written["ranks"][0]["step_seconds"]), 3)
        readies = [bucket["ready_seconds"] for bucket in written["buckets"]]
        self.assertEqual(readies, sorted(readies))
        self.assertEqual(written["transports"], [])  # one rank: nothing crosses a link
        predicted = scaling("--profile", profile, "--nodes", 1, "--gpus-per-node", 1, "--fabric", "roce-25g", "--json")
        self.assertEqual(predicted.returncode, 0, predicted.describe())
        compute = json.loads(predicted.stdout)["predictions"][0]
        # The config's batch (32) is 8 times the profile's; the update's time follows the parameters
        # and stays; one rank waits for nobody.
        self.assertAlmostEqual(compute["backward_seconds"], 8 * written["backward_seconds"], places=9)
        self.assertAlmostEqual(compute["optimizer_seconds"], written["optimizer_seconds"], places=12)
        self.assertAlmostEqual(compute["step_seconds"], 8 * (written["forward_seconds"] + written["backward_seconds"]) +
                               written["optimizer_seconds"], places=9)
        self.assertEqual(compute["allreduce_seconds"], 0)
        self.assertTrue(all("multiply_adds" in layer for layer in written["layers"]))
        # The same profile for another image size is refused: its layers' multiply-adds differ.
        other = scaling("--profile", profile, "--sample-shape", "64x64x3", "--classes", "10", "--fabric", "roce-25g")
        self.assertEqual(other.returncode, 2, other.describe())
        self.assertIn("the profile was taken of another model or image size", other.stderr)
        # Four ranks: the slowest of four draws from its steps sets the pace, never faster than one.
        predicted = scaling("--profile", profile, "--nodes", 2, "--gpus-per-node", 2, "--fabric", "roce-25g", "--json")
        self.assertEqual(predicted.returncode, 0, predicted.describe())
        four = json.loads(predicted.stdout)["predictions"][0]
        steps = written["ranks"][0]["step_seconds"]
        self.assertAlmostEqual(four["backward_seconds"] / compute["backward_seconds"], max(steps) / statistics.median(steps),
                               places=9)
        self.assertGreaterEqual(four["straggler_seconds"], 0)
        # A profile of an earlier calibrate (no update, no ranks' steps) is refused, naming the field.
        for field in ("optimizer_seconds", "ranks"):
            old = dict(written)
            del old[field]
            stale = os.path.join(WORK, f"stale-profile-{field}.json")
            with open(stale, "w") as file:
                json.dump(old, file)
            refused = scaling("--profile", stale, "--fabric", "roce-25g")
            self.assertEqual(refused.returncode, 2, refused.describe())
            self.assertIn(stale, refused.stderr, refused.describe())
            self.assertIn(field, refused.stderr, refused.describe())
        # A profile of another model lacks this one's layers.
        written["layers"] = written["layers"][1:]
        partial = os.path.join(WORK, "partial-profile.json")
        with open(partial, "w") as file:
            json.dump(written, file)
        refused = scaling("--profile", partial, "--fabric", "roce-25g")
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn(partial, refused.stderr, refused.describe())
        self.assertIn("'layers'", refused.stderr, refused.describe())
        self.assertIn("conv1", refused.stderr, refused.describe())


def interpolated(fit, size):
    """A measured transport's time for `size` bytes, as `phalanx scaling` reads the timed sizes."""
    points = [(point["bytes"], point["seconds"]) for point in fit["measured"]]
    if size >= points[-1][0]:
        return points[-1][1] + (size - points[-1][0]) * fit["seconds_per_byte"]
    below = (0.0, min(fit["latency_seconds"], points[0][1]))
    for point in points:
        if size < point[0]:
            return below[1] + (point[1] - below[1]) * (size - below[0]) / (point[0] - below[0])
        below = point
    raise AssertionError("unreachable")


class MeasuredTransportTest(unittest.TestCase):
    def test_two_ranks_calibrate_a_transport_that_scaling_costs_the_buckets_with(self):
        profile = os.path.join(WORK, "profile-2-ranks.json")
        result = e2e.mpirun(2, "bench", "calibrate", CONFIG, "--iterations", 2, "--batch-size", 4,
                            "--max-bytes", 262144, "--output", profile)
        self.assertEqual(result.returncode, 0, result.describe())
        with open(profile) as file:
            written = json.load(file)
        transports = {transport["name"]: transport for transport in written["transports"]}
        self.assertIn("shared_memory", transports, written["transports"])
        fit = transports["shared_memory"]
        self.assertEqual(fit["ranks"], 2)
        self.assertGreater(fit["seconds_per_byte"], 0)
        predicted = scaling("--profile", profile, "--gpus-per-node", 2, "--transport", "shared_memory", "--json")
        self.assertEqual(predicted.returncode, 0, predicted.describe())
        output = json.loads(predicted.stdout)
        self.assertIn("shared_memory", output["fabric"])
        prediction = output["predictions"][0]
        self.assertEqual(prediction["ranks"], 2)
        self.assertEqual([rank["rank"] for rank in written["ranks"]], [0, 1])
        # Every timed size has its progress stages: what each MPI call starts, and how long it held.
        for point in fit["measured"]:
            self.assertEqual(len(point["stages"]), len(point["seconds_in_calls"]), point)
            self.assertTrue(all(value >= 0 for value in point["stages"] + point["seconds_in_calls"]), point)
            self.assertGreater(sum(point["stages"]), 0, point)
        total = 0.0
        previous_finish = 0.0
        for bucket in prediction["buckets"]:
            expected = interpolated(fit, bucket["bytes"])
            self.assertAlmostEqual(bucket["ring"]["seconds"], expected, places=12)
            # MPI's all-reduce advances in stages at MPI calls: once ready, after the bucket before it,
            # and no faster than its stages back to back.
            self.assertGreaterEqual(bucket["start_seconds"], max(bucket["ready_seconds"], previous_finish) - 1e-12)
            self.assertGreaterEqual(bucket["finish_seconds"] - bucket["start_seconds"], expected - 1e-9)
            previous_finish = bucket["finish_seconds"]
            total += expected
        self.assertAlmostEqual(prediction["allreduce_seconds"], total, places=9)
        printed = scaling("--profile", profile, "--gpus-per-node", 2, "--transport", "shared_memory")
        self.assertEqual(printed.returncode, 0, printed.describe())
        self.assertIn("all-reduce ms", printed.stdout)
        # The fit is for 2 ranks; a transport the profile lacks; --transport without --profile.
        for args, words in ((("--gpus-per-node", 4), [profile, "2 ranks", "4"]),
                            (("--gpus-per-node", 2, "--transport", "network"), [profile, "'transports'", "network"])):
            transport = [] if "--transport" in args else ["--transport", "shared_memory"]
            refused = scaling("--profile", profile, *transport, *args)
            self.assertEqual(refused.returncode, 2, refused.describe())
            for word in words:
                self.assertIn(word, refused.stderr, refused.describe())
        refused = scaling("--images-per-second", 100, "--transport", "shared_memory")
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn("--profile", refused.stderr, refused.describe())


class TraceBucketReadyTest(unittest.TestCase):
    def test_the_training_trace_marks_when_each_bucket_became_ready(self):
        run_dir = os.path.join(WORK, "traced-run")
        result = e2e.mpirun(2, "train", CONFIG, "--run-dir", run_dir, "--set", "train.epochs=20", "--set",
                            "train.max_steps=7", "--set", "trace.steps=3", "--set", "distributed.bucket_mb=0.25",
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        with open(os.path.join(run_dir, "trace.json")) as file:
            events = json.load(file)["traceEvents"]
        # ResNet-20's 272 474 gradients in buckets of 0.25 MiB (65 536 floats): 5 of them.
        for rank in range(2):
            backward = {event["args"]["step"]: event for event in events
                        if event["ph"] == "X" and event["pid"] == rank and event["name"] == "backward"}
            self.assertEqual(len(backward), 3, sorted(backward))
            for step, span in backward.items():
                ready = [event for event in events if event["ph"] == "i" and event["pid"] == rank
                         and event["args"]["step"] == step]
                self.assertEqual([event["args"]["bucket"] for event in ready], list(range(5)), ready)
                self.assertTrue(all(event["name"] == "bucket ready" and event["tid"] == 2 for event in ready))
                times = [event["ts"] for event in ready]
                self.assertEqual(times, sorted(times))
                # Within backward; the last bucket (the first layers') at its end, when the wait starts.
                self.assertGreaterEqual(times[0], span["ts"] - 1)
                self.assertLessEqual(times[-1], span["ts"] + span["dur"] + 1000)


if __name__ == "__main__":
    e2e.main()
