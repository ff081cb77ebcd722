"""End-to-end: observability of a real 2-rank training run (docs/OBSERVABILITY.md).
- the per-stage breakdown adds up to the step time (and to the epoch's own wall clock) within 5%,
  `other` stays under 5% of it, the exposed all-reduce is at most the total; the per-rank table
  is printed each epoch;
- on a loaded machine (spinning processes beside a second run) a rank's waits for its peer land
  in named stages (allreduce_wait, sync_wait), so `other` stays under 5% there too;
- trace.json parses, has every rank and stream, monotone non-overlapping events per track,
  `trace.steps` sampled steps each with its sync wait, and clock offsets within their recorded
  error bounds (of 0: one machine) and the two ranks' windows of the same all-reduce overlapping
  (a collective cannot end on one rank before it began on the other), also on the loaded machine;
- per-rank step-time percentiles and the skew in summary.json;
- report.html renders in headless Chromium: the DOM holds every chart with its data, and the
  screenshot shows drawn plots;
- the TensorBoard event files read back with the real `tensorboard` package (PyPI, in a virtual
  environment made here) give the scalars of metrics.jsonl;
- `phalanx report` rebuilds the page and refuses bad run directories with exit status 2."""

import json
import os
import shutil
import subprocess
import sys
import unittest

import e2e_common as e2e

TRAIN, TEST = 2000, 500
RANKS, BATCH, EPOCHS = 2, 32, 2
STEPS_PER_EPOCH = TRAIN // (RANKS * BATCH)  # 31
TRACE_STEPS = 10
# Busy processes beside the loaded run: with 2 ranks that makes 5 runnable processes on the
# 2 cores of CI, about what two parallel compiles add.
SPINNERS = 3
WARMUP_STEPS = 3  # the trainer's throughput warm-up: traced and percentile steps come after it
LOG_EVERY = 5
STAGES = e2e.STAGES
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def setUpModule():
    global WORK, DATA, RUN_DIR, RESULT, CONFIG_PATH
    e2e.require_fashion()
    WORK = e2e.work_dir("observability")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    RUN_DIR = os.path.join(WORK, "run")
    config = e2e.base_config(DATA, name="observe", seed=5, epochs=EPOCHS, batch_size=BATCH,
                             log_every_steps=LOG_EVERY)
    config["trace"] = {"steps": TRACE_STEPS}
    # Gradient norms are reported with clipping; a large max_norm leaves the run as it would be.
    config["train"]["clip_grad_norm"] = 100.0
    config["eval"] = {"top_k": [2]}
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "observe.yaml"), config)
    RESULT = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", RUN_DIR, timeout=400)


def check_trace_clocks(test, run_dir):
    """The trace's clock offsets lie within their recorded error bounds of the truth (0: the ranks
    share this machine's clock), the bounds are far below a scheduler tick, and the two ranks'
    windows of each sampled all-reduce overlap within those bounds (a collective cannot end on
    one rank before it began on the other)."""
    with open(os.path.join(run_dir, "trace.json")) as stream:
        trace = json.load(stream)
    offsets, bounds = trace["otherData"]["clock_offsets_us"], trace["otherData"]["clock_error_bounds_us"]
    test.assertEqual((len(offsets), len(bounds)), (RANKS, RANKS))
    test.assertEqual((offsets[0], bounds[0]), (0, 0))
    for rank in range(RANKS):
        # 0.002 us: the file's rounding of both numbers to nanoseconds.
        test.assertLessEqual(abs(offsets[rank]), bounds[rank] + 0.002, (rank, offsets, bounds))
        test.assertLess(bounds[rank], 2000.0, (rank, offsets, bounds))
    windows = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "X" and event["tid"] == 2:
            windows[(event["pid"], event["args"]["step"])] = (event["ts"], event["ts"] + event["dur"])
    # The alignment error, plus room for where the stage clocks put each window's ends (the
    # windows are laid out from stage durations, which leave the moments between stages out).
    tolerance_us = max(bounds) + 1000.0
    checked = 0
    for step in range(WARMUP_STEPS + 1, WARMUP_STEPS + 1 + TRACE_STEPS):
        first, second = windows[(0, step)], windows[(1, step)]
        test.assertLessEqual(first[0], second[1] + tolerance_us, (step, first, second))
        test.assertLessEqual(second[0], first[1] + tolerance_us, (step, first, second))
        checked += 1
    test.assertEqual(checked, TRACE_STEPS)


class ObservabilityTest(unittest.TestCase):
    def setUp(self):
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        self.assertEqual(RESULT.error_lines(), [], RESULT.describe())
        self.summary = e2e.read_summary(RUN_DIR)
        self.events = e2e.read_metrics(RUN_DIR)

    # ----- breakdown ------------------------------------------------------------------------
    def assert_adds_up(self, breakdown, where):
        step_ms = breakdown["step_ms"]
        self.assertGreater(step_ms, 0, where)
        stages_ms = sum(breakdown[stage]["ms_per_step"] for stage in STAGES)
        self.assertAlmostEqual(stages_ms / step_ms, 1.0, delta=0.05, msg=(where, breakdown))
        # The named stages explain the step: what none of them covers stays small.
        self.assertLess(breakdown["other"]["share"], 0.05, (where, breakdown))
        total = breakdown["allreduce_total"]["ms_per_step"]
        exposed = breakdown["allreduce_wait"]["ms_per_step"]
        self.assertGreater(total, 0, (where, breakdown))
        self.assertLessEqual(exposed, total * 1.0001, (where, breakdown))
        self.assertGreater(breakdown["host_to_device"]["ms_per_step"], 0, (where, breakdown))

    def test_breakdown_adds_up_to_the_step_and_exposed_allreduce_is_at_most_total(self):
        self.assert_adds_up(self.summary["time_breakdown"], "summary")
        self.assertEqual(len(self.summary["ranks"]), RANKS)
        for entry in self.summary["ranks"]:
            self.assert_adds_up(entry["time_breakdown"], f"rank {entry['rank']}")
        epochs = [event for event in self.events if event["event"] == "epoch"]
        self.assertEqual(len(epochs), EPOCHS)
        for event in epochs:
            breakdown = event["time_breakdown"]
            self.assert_adds_up(breakdown, f"epoch {event['epoch']}")
            # An independent clock: the epoch's own wall time against its steps' summed times.
            steps_seconds = breakdown["step_ms"] * breakdown["steps"] / 1000.0
            self.assertAlmostEqual(steps_seconds / event["seconds"], 1.0, delta=0.05, msg=event)

    def test_per_rank_table_is_printed_each_epoch(self):
        tables = RESULT.stdout.count("time per step by rank (ms):")
        self.assertEqual(tables, EPOCHS, RESULT.stdout)
        lines = RESULT.stdout.splitlines()
        start = lines.index(next(line for line in lines if "time per step by rank" in line))
        rows = [line.split() for line in lines[start + 2:start + 2 + RANKS]]
        self.assertEqual([row[0] for row in rows], [str(rank) for rank in range(RANKS)], lines[start:start + 4])
        for row in rows:
            self.assertTrue(all(e2e.finite(float(cell)) for cell in row if cell != "/"), row)

    # ----- percentiles ----------------------------------------------------------------------
    def test_step_time_percentiles_per_rank_and_skew(self):
        measured = EPOCHS * STEPS_PER_EPOCH - WARMUP_STEPS
        medians = []
        for entry in self.summary["ranks"]:
            times = entry["step_time_ms"]
            self.assertEqual(times["steps"], measured, times)
            ordered = [times[key] for key in ("min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms")]
            self.assertEqual(ordered, sorted(ordered), times)
            self.assertGreater(times["min_ms"], 0, times)
            self.assertLessEqual(times["min_ms"], times["mean_ms"])
            self.assertLessEqual(times["mean_ms"], times["max_ms"])
            medians.append(times["p50_ms"])
        skew = self.summary["step_time_skew"]
        self.assertAlmostEqual(skew["slowest_p50_ms"], max(medians))
        self.assertAlmostEqual(skew["fastest_p50_ms"], min(medians))
        self.assertAlmostEqual(skew["p50_ratio"], max(medians) / min(medians))

    # ----- trace ----------------------------------------------------------------------------
    def test_trace_has_every_rank_and_stream_in_order(self):
        path = os.path.join(RUN_DIR, "trace.json")
        with open(path) as stream:
            trace = json.load(stream)
        events = trace["traceEvents"]
        spans = [event for event in events if event["ph"] == "X"]
        names = {(event["pid"], event["tid"]): event["args"]["name"]
                 for event in events if event["ph"] == "M" and event["name"] == "thread_name"}
        processes = {event["pid"]: event["args"]["name"]
                     for event in events if event["ph"] == "M" and event["name"] == "process_name"}
        self.assertEqual(sorted(processes), list(range(RANKS)), processes)
        for rank in range(RANKS):
            self.assertIn(f"rank {rank}", processes[rank])
            tracks = {event["tid"] for event in spans if event["pid"] == rank}
            self.assertEqual(tracks, {0, 1, 2, 3}, f"rank {rank} tracks {tracks}")
            self.assertEqual([names[(rank, tid)].split()[0] for tid in range(4)],
                             ["compute", "copy", "communication", "data"])
            steps = {event["args"]["step"] for event in spans if event["pid"] == rank}
            # Global steps are 1-based after the step: the first sampled one follows warm-up.
            self.assertEqual(sorted(steps), list(range(WARMUP_STEPS + 1, WARMUP_STEPS + 1 + TRACE_STEPS)))
            for tid in range(4):
                track = [event for event in spans if event["pid"] == rank and event["tid"] == tid]
                for before, after in zip(track, track[1:]):
                    self.assertLessEqual(before["ts"], after["ts"], (before, after))
                    self.assertLessEqual(before["ts"] + before["dur"], after["ts"] + 0.002, (before, after))
            compute = [event["name"] for event in spans if event["pid"] == rank and event["tid"] == 0]
            # Every sampled step also ends in the stop agreement (all but the run's last step do).
            for stage in ("forward", "backward", "optimizer", "sync wait"):
                self.assertEqual(compute.count(stage), TRACE_STEPS, stage)
        self.assertGreaterEqual(min(event["ts"] for event in spans), 0)

    def test_trace_clocks_are_aligned_across_ranks(self):
        check_trace_clocks(self, RUN_DIR)

    # ----- report ---------------------------------------------------------------------------
    def chromium(self, *args):
        if not CHROMIUM:
            self.skipTest("chromium is not installed (Debian package chromium)")
        command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                   "--no-first-run", "--user-data-dir=" + os.path.join(WORK, "chromium-profile"), *args]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
        self.assertEqual(completed.returncode, 0, completed.stderr[-2000:])
        return completed.stdout

    def test_report_renders_with_every_chart_in_headless_chromium(self):
        from html.parser import HTMLParser
        page = os.path.join(RUN_DIR, "report.html")
        dom = self.chromium("--dump-dom", "file://" + page)

        class Elements(HTMLParser):
            def __init__(self):
                super().__init__()
                self.found = []

            def handle_starttag(self, tag, attributes):
                self.found.append((tag, dict(attributes)))
        parser = Elements()
        parser.feed(dom)
        figures = {attributes.get("id") for tag, attributes in parser.found if tag == "figure"}
        for figure in ("loss-chart", "accuracy-chart", "throughput-chart", "learning-rate-chart",
                       "breakdown-chart", "skew-chart"):
            self.assertIn(figure, figures)
        lines = {attributes["data-series"]: int(attributes["data-points"])
                 for tag, attributes in parser.found if tag == "polyline"}
        logged = [event for event in self.events if event["event"] == "step"]
        self.assertEqual(lines["train (rank 0 batches)"], len(logged))
        self.assertEqual(lines["test"], EPOCHS)
        bars = [attributes["data-bar"] for tag, attributes in parser.found
                if tag == "g" and attributes.get("class") == "bar"]
        self.assertEqual(bars, [f"rank {rank}" for rank in range(RANKS)])
        segments = {attributes["data-segment"] for tag, attributes in parser.found
                    if tag == "rect" and attributes.get("class") == "segment"}
        self.assertTrue({"forward", "backward", "host to device"} <= segments, segments)
        tables = {attributes.get("id") for tag, attributes in parser.found if tag == "table"}
        self.assertTrue({"breakdown-table", "step-time-table", "summary-table"} <= tables, tables)
        self.assertNotIn("<script", dom)
        self.assertIn("fmnist_cnn", dom)  # the config is on the page

        screenshot = os.path.join(WORK, "report.png")
        self.chromium("--screenshot=" + screenshot, "--window-size=1400,1800", "file://" + page)
        from PIL import Image
        image = Image.open(screenshot).convert("RGB")
        self.assertEqual(image.size, (1400, 1800))
        # The plots are drawn: the palette's first colours (series 1 and 2) cover many pixels.
        colours = image.getcolors(maxcolors=1 << 20)
        counts = {colour: count for count, colour in colours}
        for expected in ((0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)):
            near = sum(count for colour, count in counts.items()
                       if all(abs(a - b) <= 8 for a, b in zip(colour, expected)))
            self.assertGreater(near, 500, f"colour {expected} barely on the screenshot")

    def test_report_command_rebuilds_the_page_and_refuses_bad_run_directories(self):
        copy = os.path.join(WORK, "copy")
        shutil.copytree(RUN_DIR, copy, ignore=shutil.ignore_patterns("checkpoints", "report.html"))
        result = e2e.phalanx("report", copy)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(result.stdout.strip(), os.path.join(copy, "report.html"))
        with open(os.path.join(copy, "report.html")) as stream:
            rebuilt = stream.read()
        self.assertIn('id="breakdown-chart"', rebuilt)

        missing = e2e.phalanx("report", os.path.join(WORK, "no-such-run"))
        self.assertEqual(missing.returncode, 2, missing.describe())
        self.assertIn("no-such-run", missing.stderr)

        broken = os.path.join(WORK, "broken")
        os.makedirs(broken, exist_ok=True)
        with open(os.path.join(broken, "metrics.jsonl"), "w") as stream:
            stream.write('{"event": "step", "step": 1}\n{"event": "ste\n')
        result = e2e.phalanx("report", broken)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("metrics.jsonl:2", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(broken, "report.html")))

    # ----- TensorBoard ----------------------------------------------------------------------
    def test_tensorboard_reads_the_same_scalars_as_metrics_jsonl(self):
        python = tensorboard_python()
        files = [name for name in os.listdir(RUN_DIR) if name.startswith("events.out.tfevents.")]
        self.assertEqual(len(files), 1, files)
        reader = os.path.join(WORK, "read_scalars.py")
        with open(reader, "w") as stream:
            stream.write(READ_SCALARS)
        completed = subprocess.run([python, reader, RUN_DIR], capture_output=True, text=True, timeout=300)
        self.assertEqual(completed.returncode, 0, completed.stderr[-3000:])
        scalars = json.loads(completed.stdout)
        expected = {}
        for event in self.events:
            for tag, value in flatten(event["event"], event):
                expected.setdefault(tag, []).append((event["step"], value))
        self.assertEqual(sorted(scalars), sorted(expected))
        for tag, points in expected.items():
            got = scalars[tag]
            self.assertEqual([step for step, _ in got], [step for step, _ in points], tag)
            for (_, value), (_, written) in zip(got, points):
                self.assertAlmostEqual(value, written, delta=1e-6 * max(1.0, abs(written)), msg=tag)
        self.assertIn("eval/test_accuracy", scalars)
        self.assertIn("eval/test_top5_accuracy", scalars)
        self.assertIn("epoch/grad_norm/mean", scalars)
        self.assertIn("step/grad_norm/max", scalars)
        self.assertIn("epoch/time_breakdown/forward/ms_per_step", scalars)

    # ----- top-k accuracy and gradient norms ------------------------------------------------
    def test_top_k_accuracies_and_gradient_norms_are_reported(self):
        evals = [event for event in self.events if event["event"] == "eval"]
        self.assertEqual(len(evals), EPOCHS)
        for event in evals + [self.summary] + self.summary["history"]:
            # Fashion-MNIST has 10 classes: top-5 always, top-2 from eval.top_k.
            top1, top2, top5 = event["test_accuracy"], event["test_top2_accuracy"], event["test_top5_accuracy"]
            self.assertLessEqual(top1, top2)
            self.assertLessEqual(top2, top5)
            self.assertLessEqual(top5, 1.0)
            self.assertGreater(top5, top1, "top-5 of a 2-epoch model should beat its top-1")
        epochs = [event for event in self.events if event["event"] == "epoch"]
        steps = [event for event in self.events if event["event"] == "step"]
        self.assertEqual(len(epochs), EPOCHS)
        for event in epochs + steps:
            norm = event["grad_norm"]
            self.assertGreater(norm["mean"], 0.0, event)
            self.assertGreaterEqual(norm["max"], norm["mean"], event)
        self.assertGreaterEqual(max(event["grad_norm"]["max"] for event in epochs),
                                max(event["grad_norm"]["max"] for event in steps))


def flatten(prefix, value, skip=("event", "step", "epoch", "time")):
    """The TensorBoard tags phalanx writes for one metrics.jsonl event (tensorboard_writer.hpp)."""
    if isinstance(value, dict):
        for key, child in value.items():
            if prefix.count("/") == 0 and key in skip:
                continue
            yield from flatten(f"{prefix}/{key}", child, ())
    elif e2e.finite(value):
        yield prefix, float(value)


READ_SCALARS = """
import json, sys
from tensorboard.backend.event_processing import event_accumulator
accumulator = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={event_accumulator.SCALARS: 0})
accumulator.Reload()
print(json.dumps({tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
                  for tag in accumulator.Tags()["scalars"]}))
"""


def tensorboard_python():
    """Python of a virtual environment with tensorboard from PyPI, kept under the build tree so
    reruns are fast. Skips the calling test only when PyPI cannot be reached."""
    folder = os.path.join(os.path.dirname(e2e.WORK_ROOT.rstrip("/")), "tensorboard-venv")
    python = os.path.join(folder, "bin", "python")
    check = [python, "-c", "import tensorboard.backend.event_processing.event_accumulator"]
    if os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", folder], check=True, capture_output=True, timeout=300)
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              "tensorboard"], capture_output=True, text=True, timeout=600)
    if install.returncode != 0:
        output = install.stdout + install.stderr
        unreachable = any(sign in output for sign in ("NewConnectionError", "Temporary failure in name",
                                                      "Could not find a version", "Network is unreachable",
                                                      "ConnectTimeout", "ProxyError"))
        if unreachable:
            raise unittest.SkipTest("PyPI is unreachable, cannot install tensorboard: " + output[-500:])
        raise AssertionError("pip install tensorboard failed:\n" + output[-3000:])
    return python


class LoadedMachineTest(unittest.TestCase):
    """The same kind of run with SPINNERS busy processes beside it. A rank that leaves the gradient
    all-reduce before its peer (or whose peer loses its core meanwhile) waits for it in the next
    collective, the stop agreement; that wait counted as `other` (6-18% of a step on a loaded
    2-core machine) until it became the sync_wait stage. Load may make every stage longer; it
    must not make time go unaccounted."""

    @classmethod
    def setUpClass(cls):
        cls.run_dir = os.path.join(WORK, "loaded")
        config = e2e.base_config(DATA, name="loaded", seed=5, epochs=1, batch_size=BATCH,
                                 log_every_steps=LOG_EVERY)
        config["trace"] = {"steps": TRACE_STEPS}
        path = e2e.write_config(os.path.join(WORK, "loaded.yaml"), config)
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(SPINNERS)]
        try:
            cls.result = e2e.mpirun(RANKS, "train", path, "--run-dir", cls.run_dir, timeout=400)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()

    def test_waits_for_the_peer_are_named_stages_not_other(self):
        self.assertEqual(self.result.returncode, 0, self.result.describe())
        summary = e2e.read_summary(self.run_dir)
        self.assertEqual(len(summary["ranks"]), RANKS)
        for entry in summary["ranks"]:
            breakdown = entry["time_breakdown"]
            where = (f"rank {entry['rank']}", breakdown)
            stages_ms = sum(breakdown[stage]["ms_per_step"] for stage in STAGES)
            self.assertAlmostEqual(stages_ms / breakdown["step_ms"], 1.0, delta=0.05, msg=where)
            self.assertLess(breakdown["other"]["share"], 0.05, where)
            # Every step but the run's last ends in the stop agreement: its time is never nothing.
            self.assertGreater(breakdown["sync_wait"]["ms_per_step"], 0, where)
        print("\nloaded run, ms per step (allreduce_wait, sync_wait, other): " + "; ".join(
            f"rank {entry['rank']} " + ", ".join(
                f"{entry['time_breakdown'][stage]['ms_per_step']:.2f}"
                for stage in ("allreduce_wait", "sync_wait", "other")) for entry in summary["ranks"]))

    def test_trace_clocks_stay_aligned_beside_busy_processes(self):
        # Where barrier exits put one rank a whole scheduler tick (4 ms) off, the round trips
        # still give an offset within its bound.
        self.assertEqual(self.result.returncode, 0, self.result.describe())
        check_trace_clocks(self, self.run_dir)


class TraceConfigTest(unittest.TestCase):
    """`trace.steps` is validated like every key, and 0 turns the trace off."""

    def test_bad_trace_settings_are_refused_and_zero_writes_no_trace(self):
        data = e2e.make_synth(os.path.join(WORK, "synth.h5"), train=256, test=64)
        config = e2e.base_config(data, name="notrace", batch_size=16, max_steps=6)
        path = e2e.write_config(os.path.join(WORK, "notrace.yaml"), config)
        refused = e2e.phalanx("train", path, "--set", "trace.steps=-1", "--run-dir", os.path.join(WORK, "bad1"))
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn("trace.steps", refused.stderr)
        misspelt = e2e.phalanx("train", path, "--set", "trace.step=5", "--run-dir", os.path.join(WORK, "bad2"))
        self.assertEqual(misspelt.returncode, 2, misspelt.describe())
        self.assertIn("trace.steps", misspelt.stderr)  # did you mean
        run_dir = os.path.join(WORK, "notrace")
        result = e2e.phalanx("train", path, "--set", "trace.steps=0", "--run-dir", run_dir)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertFalse(os.path.exists(os.path.join(run_dir, "trace.json")))
        self.assertTrue(os.path.exists(os.path.join(run_dir, "report.html")))


class BenchTest(unittest.TestCase):
    """`phalanx bench`: each sub-command measures what it says, with numbers that hang together."""

    def test_allreduce_reports_bus_bandwidth_by_size(self):
        ranks = 4
        result = e2e.mpirun(ranks, "bench", "allreduce", "--min-bytes", 4096, "--max-bytes", 65536,
                            "--iterations", 5, "--warmup", 2, timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
        self.assertEqual([int(row[0]) for row in rows], [4096, 8192, 16384, 32768, 65536], result.stdout)
        for row in rows:
            self.assertEqual(int(row[1]), int(row[0]) // 4)
            cells = [float(cell) for cell in row[2:] if cell != "|"]
            self.assertEqual(len(cells), 6, row)  # blocking and non-blocking MPI: time, algbw, busbw
            for time_us, algbw, busbw in (cells[0:3], cells[3:6]):
                self.assertGreater(time_us, 0)
                # algbw = bytes / time; busbw = algbw x 2(n-1)/n (1.5 for 4 ranks); printed rounded
                self.assertAlmostEqual(algbw, int(row[0]) / (time_us * 1e-6) / 1e9, delta=0.002 + 0.002 * algbw)
                self.assertAlmostEqual(busbw, algbw * 2 * (ranks - 1) / ranks, delta=0.002 + 0.002 * busbw)
        self.assertIn("4 ranks", result.stdout)

    def test_loader_throughput(self):
        result = e2e.phalanx("bench", "loader", DATA, "--batch-size", 32, "--batches", 40, timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        line = next(line for line in result.stdout.splitlines() if "batches in" in line)
        words = line.replace(":", "").replace(",", "").split()
        batches, seconds, images_per_second = int(words[0]), float(words[3]), float(words[7])
        self.assertEqual(batches, 40, line)
        self.assertAlmostEqual(images_per_second, batches * 32 / seconds, delta=0.01 * images_per_second + 1)
        missing = e2e.phalanx("bench", "loader", os.path.join(WORK, "missing.h5"))
        self.assertEqual(missing.returncode, 2, missing.describe())
        self.assertIn("missing.h5", missing.stderr)

    def test_transfer_without_a_gpu_says_so_with_status_2(self):
        if os.environ.get("PHALANX_WITH_CUDA") == "1" and shutil.which("nvidia-smi"):
            self.skipTest("a CUDA build on a machine with a GPU driver: transfer measures instead")
        result = e2e.phalanx("bench", "transfer")
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("bench transfer", result.stderr)

    def test_devices_runs_the_model_on_each_device_side_by_side(self):
        data = e2e.make_synth(os.path.join(WORK, "bench-synth.h5"), train=512, test=64)
        config = e2e.write_config(os.path.join(WORK, "bench.yaml"),
                                  e2e.base_config(data, name="bench", batch_size=16))
        run_root = os.path.join(WORK, "bench-devices")
        result = e2e.phalanx("bench", "devices", config, "--steps", 8, "--run-dir", run_root, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        header = next(line for line in result.stdout.splitlines() if line.startswith("device "))
        self.assertEqual(header.split()[:3], ["device", "precision", "images/s"], header)
        # One row per device and precision: fp32 and bf16 side by side.
        rows = {(line.split()[0], line.split()[1]): line.split() for line in result.stdout.splitlines()
                if line.split()[:1] in (["cpu"], ["cuda"]) and len(line.split()) > 2}
        for precision, directory in (("fp32", "cpu"), ("bf16", "cpu-bf16")):
            self.assertIn(("cpu", precision), rows, result.stdout)
            cpu = rows[("cpu", precision)]
            images_per_second, step_ms = float(cpu[2]), float(cpu[3])
            stages = [float(cell) for cell in cpu[4:10]]
            self.assertGreater(images_per_second, 0)
            self.assertLessEqual(sum(stages), step_ms * 1.001 + 0.01, (header, cpu))
            self.assertGreater(sum(stages), step_ms * 0.9, (header, cpu))
            summary = e2e.read_summary(os.path.join(run_root, directory))
            self.assertEqual(summary["steps"], 8)
            self.assertAlmostEqual(summary["images_per_sec"], images_per_second, delta=1.0)
        # The bf16 row says how this CPU runs bf16 (AMX, AVX-512 bf16, or emulated).
        self.assertIn("bf16 ", " ".join(rows[("cpu", "bf16")][10:]))
        if not any(device == "cuda" for device, _ in rows):
            self.assertIn("cuda   not measured", result.stdout)


if __name__ == "__main__":
    e2e.main()
