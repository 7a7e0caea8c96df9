"""Every job on a Spark standalone cluster (one master, one worker on loopback) by both routes, over a journal
recorded from real pika traffic:

- `warrenmq analytics JOB --master spark://… --python-env ARCHIVE` (the driver ships the project's code);
- `spark-submit`, by running the cluster recipe of docs/analytics.md as written in a copy of the repository
  (fresh venv, `pip install`, `warrenmq analytics pack`, one `spark-submit` per job, then `report`).

Each run must show up in the master's /json/ as a FINISHED application whose executor finished tasks, and
write the summary local mode writes.

The two routes run at the same time on the one cluster (its worker has a core for each, and each application
takes one): the recipe's venv and pip install overlap the first route's jobs. Each route's applications are
told apart by the user each route's driver JVM runs as (`-Duser.name` in `SPARK_SUBMIT_OPTS`, which
spark-submit gives the driver's JVM; the master reports that property as the application's user).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.analytics.cli import SPARK_JOBS, build_parser, run
from tests.analytics.standalone import StandaloneCluster
from tests.docs.blocks import docs_block
from tests.jvm import SHORT_RUN_JVM_OPTIONS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
RECIPE_PAGE, RECIPE_ID = "docs/analytics.md", "cluster-recipe"
_PERCENTILES = ("p50_ms", "p95_ms", "p99_ms")


def job_args(job: str, journal: Path, out: Path, definitions: tuple[Path, Path]) -> list[str]:
    args = [job, "--journal", str(journal), "--out", str(out / job)]
    if job == "ttd":
        args += ["--window", "10s", "--by", "exchange,queue"]
    if job == "throughput":
        args += ["--window", "10s"]
    if job == "replay":
        args += ["--defs-a", str(definitions[0]), "--defs-b", str(definitions[1])]
    return args


def assert_same_summary(job: str, cluster: dict[str, Any], local: dict[str, Any]) -> None:
    """Counts equal exactly; ttd's approximate percentiles within what was asked (accuracy 10000: exact
    below 10,000 values per key, which the test journal is)."""
    if job != "ttd":
        assert cluster == local
        return
    strip = [{k: v for k, v in row.items() if k not in _PERCENTILES} for row in cluster["keys"]]
    assert {**cluster, "keys": strip} == {
        **local,
        "keys": [{k: v for k, v in row.items() if k not in _PERCENTILES} for row in local["keys"]],
    }
    for got, want in zip(cluster["keys"], local["keys"], strict=True):
        for name in _PERCENTILES:
            assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-9)


@dataclass
class Route:
    results: Path
    apps: dict[str, list[dict[str, Any]]]  # job -> the applications that job added to the master
    output: str


MASTER_ROUTE_USER, SUBMIT_ROUTE_USER = "warrenmq-master-route", "warrenmq-submit-route"


def new_apps(cluster: StandaloneCluster, before: set[str], name: str, user: str) -> list[dict[str, Any]]:
    """The finished applications called ``name`` run by ``user`` that were not there before (the master may
    take a moment to move an application from active to completed after its driver stops)."""
    deadline = time.monotonic() + 30
    while True:
        found = [app for app_id, app in cluster.completed_apps().items() if app_id not in before]
        found = [app for app in found if app["name"] == name and app["user"] == user]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def finished_tasks(cluster: StandaloneCluster, app_id: str) -> int:
    return len(re.findall(r"Finished task \S+ in stage", cluster.executor_logs(app_id)))


@pytest.fixture(scope="module")
def local_results(
    spark: Any,
    live_journal: Path,
    live_definitions: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, dict[str, Any]]]:
    out = tmp_path_factory.mktemp("local-results")
    summaries = {
        job: run(build_parser().parse_args(job_args(job, live_journal, out, live_definitions)), spark)
        for job in SPARK_JOBS
    }
    return out, summaries


@pytest.fixture(scope="module")
def master_route(
    recipe_started: RecipeRun,
    cluster: StandaloneCluster,
    python_env: Path,
    live_journal: Path,
    live_definitions: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Route:
    """`warrenmq analytics JOB --master spark://… --python-env ARCHIVE` for every job, then report."""
    results = tmp_path_factory.mktemp("master-route")
    warrenmq = Path(sys.executable).with_name("warrenmq")
    env = cluster.env(
        {
            "WARRENMQ_CACHE_DIR": str(results / "cache"),
            "SPARK_SUBMIT_OPTS": f"{SHORT_RUN_JVM_OPTIONS} -Duser.name={MASTER_ROUTE_USER}",
        }
    )
    apps: dict[str, list[dict[str, Any]]] = {}
    output = []
    for job in SPARK_JOBS:
        before = set(cluster.completed_apps())
        command = [str(warrenmq), "analytics", *job_args(job, live_journal, results, live_definitions)]
        command += ["--master", cluster.url, "--python-env", str(python_env)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
        assert done.returncode == 0, f"{job}: {done.stderr[-3000:]}"
        assert json.loads(done.stdout) == json.loads((results / job / "summary.json").read_text())
        output.append(done.stderr)
        apps[job] = new_apps(cluster, before, f"warrenmq-{job}", MASTER_ROUTE_USER)
    report = [
        str(warrenmq),
        "analytics",
        "report",
        "--results",
        str(results),
        "--out",
        str(results / "report"),
    ]
    done = subprocess.run(report, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return Route(results, apps, "".join(output))


def recipe() -> str:
    """The cluster recipe of docs/analytics.md (the sh block marked run-by this file), as written."""
    return docs_block(RECIPE_PAGE, RECIPE_ID)


def fresh_copy(into: Path) -> Path:
    """The repository's tracked files as they are now (what a fresh clone of this commit holds)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files a fresh clone holds")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source, target = ROOT / name, into / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    return into


@dataclass
class RecipeRun:
    process: subprocess.Popen[str]
    results: Path
    before: set[str]
    stderr: Path
    deadline: float


@pytest.fixture(scope="module")
def recipe_started(
    cluster: StandaloneCluster,
    live_journal: Path,
    live_definitions: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RecipeRun]:
    """The recipe started by bash in a fresh copy, with the variables it asks the user to set."""
    clone = fresh_copy(tmp_path_factory.mktemp("fresh-clone"))
    results = tmp_path_factory.mktemp("submit-route")
    our_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != our_bin)
    env = cluster.env(
        {"PATH": path, "MASTER": cluster.url, "JOURNAL": str(live_journal), "RESULTS": str(results),
         "DEFS_A": str(live_definitions[0]), "DEFS_B": str(live_definitions[1]),
         "WARRENMQ_CACHE_DIR": str(results / "cache"),
         "SPARK_SUBMIT_OPTS": f"{SHORT_RUN_JVM_OPTIONS} -Duser.name={SUBMIT_ROUTE_USER}",
         # The recipe's `pip install '.[analytics]'` builds the project; the jobs run none of the compiled
         # message path, so the build skips mypyc (setup.py's switch), which took 60-120 s of the two cores.
         "WARRENMQ_PURE": "1"}
    )  # fmt: skip
    for name in ("VIRTUAL_ENV", "SPARK_HOME", "SPARK_CONF_DIR"):
        env.pop(name, None)  # the recipe's own venv finds its Spark
    before = set(cluster.completed_apps())
    stderr = results.parent / "recipe.stderr"
    with stderr.open("w") as sink:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", recipe()], cwd=clone, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=sink, text=True,
        )  # fmt: skip
    run = RecipeRun(process, results, before, stderr, time.monotonic() + 1100)
    try:
        yield run
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def submit_route(recipe_started: RecipeRun, cluster: StandaloneCluster) -> Route:
    """The recipe's run, waited for."""
    run = recipe_started
    try:
        returncode = run.process.wait(timeout=max(1.0, run.deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the docs/analytics.md recipe did not finish:\n{run.stderr.read_text()[-4000:]}")
    stderr = run.stderr.read_text()
    assert returncode == 0, f"the docs/analytics.md recipe failed:\n{stderr[-4000:]}"
    apps = {job: new_apps(cluster, run.before, f"warrenmq-{job}", SUBMIT_ROUTE_USER) for job in SPARK_JOBS}
    return Route(run.results, apps, stderr)


def check_route(
    route: Route, cluster: StandaloneCluster, job: str, local: tuple[Path, dict[str, dict[str, Any]]]
) -> None:
    summary = json.loads((route.results / job / "summary.json").read_text())
    assert_same_summary(job, summary, local[1][job])
    assert (route.results / job / "summary.csv").read_text() == (local[0] / job / "summary.csv").read_text()
    assert len(route.apps[job]) == 1, (
        f"{job}: {route.apps[job]} among {list(cluster.completed_apps().values())}"
    )
    [app] = route.apps[job]
    assert app["state"] == "FINISHED"
    assert finished_tasks(cluster, app["id"]) > 0, f"no executor of {app['id']} finished a task"


@pytest.mark.parametrize("job", SPARK_JOBS)
def test_warrenmq_analytics_master_runs_the_job_on_the_cluster_as_in_local_mode(
    job: str,
    master_route: Route,
    cluster: StandaloneCluster,
    local_results: tuple[Path, dict[str, dict[str, Any]]],
) -> None:
    check_route(master_route, cluster, job, local_results)


@pytest.mark.parametrize("job", SPARK_JOBS)
def test_the_readme_spark_submit_recipe_runs_the_job_on_the_cluster_as_in_local_mode(
    job: str,
    submit_route: Route,
    cluster: StandaloneCluster,
    local_results: tuple[Path, dict[str, dict[str, Any]]],
) -> None:
    check_route(submit_route, cluster, job, local_results)


@pytest.mark.parametrize("route_name", ["master_route", "submit_route"])
def test_the_report_over_cluster_outputs_has_every_chart(
    route_name: str, request: pytest.FixtureRequest
) -> None:
    route: Route = request.getfixturevalue(route_name)
    page = (route.results / "report" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3
    assert "<h2>replay</h2>" in page
    assert sorted(p.name for p in (route.results / "report").glob("*.png")) == [
        "fanout.png", "throughput.png", "ttd.png",
    ]  # fmt: skip


def test_the_master_route_prints_the_summary_and_no_spark_log(master_route: Route) -> None:
    """Spark's log goes to a file unless --verbose: a successful run writes nothing to stderr."""
    assert master_route.output == ""
