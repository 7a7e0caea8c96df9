"""Building the client matrix's JVM programs: the RabbitMQ Java client (current from Maven Central, and
Debian's 5.0.0) and Spring AMQP.

Maven only resolves a project's classpath, once per ``pom.xml`` (``dependency:build-classpath`` into the
cache's own local repository; afterwards no Maven runs at all); ``javac`` compiles the sources once per
version of them. Each returns the command that runs the program.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.jvm import SHORT_RUN_JVM_OPTIONS

from .build_cache import built, fetched, fingerprint, locked, run

HERE = Path(__file__).parent
# Where Debian puts the libraries (librabbitmq-client-java, libslf4j-java).
DEBIAN_JAVA_JARS = (Path("/usr/share/java/amqp-client.jar"), Path("/usr/share/java/slf4j-api.jar"))
# javac and the programs are JVMs of a second or a few (tests/jvm.py): javac took 1.7-1.9 s of CPU on the
# Java sources with HotSpot's defaults and 1.0-1.1 s on these.
JAVA = ["java", *SHORT_RUN_JVM_OPTIONS.split()]
JAVAC = ["javac", *(f"-J{option}" for option in SHORT_RUN_JVM_OPTIONS.split())]


def _require_jdk() -> None:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (javac/java)")


def _maven_classpath(project: Path, root: Path) -> list[str]:
    """The project's resolved classpath: the jars in the cache's Maven repository."""
    saved = root / "maven" / f"{project.name}-{fingerprint(project / 'pom.xml')}.classpath"
    if saved.exists():
        jars = saved.read_text().strip().split(":")
        if all(Path(jar).exists() for jar in jars):
            return jars
    if shutil.which("mvn") is None:
        pytest.skip("mvn not installed (apt-get install maven)")
    saved.parent.mkdir(parents=True, exist_ok=True)
    partial = saved.with_suffix(".partial")
    done = run(
        [
            "mvn",
            "--batch-mode",
            "--quiet",
            f"-Dmaven.repo.local={root / 'm2'}",
            "dependency:build-classpath",
            f"-Dmdep.outputFile={partial}",
        ],
        project,
    )
    fetched(done, f"mvn dependency:build-classpath ({project.name}/pom.xml)")
    partial.rename(saved)
    return saved.read_text().strip().split(":")


def _compiled(name: str, project: Path, classpath: list[str], root: Path) -> Path:
    """``project``'s Java sources (and java/Json.java, the JSON writer they share) compiled against
    ``classpath``, once per version of the sources."""
    sources = sorted({*project.glob("*.java"), HERE / "java/Json.java"})
    classes = root / name / fingerprint(*sources, *[Path(jar) for jar in classpath])
    if not (classes / ".built").exists():
        shutil.rmtree(classes, ignore_errors=True)
        cmd = [*JAVAC, "-nowarn", "-d", str(classes), "-cp", ":".join(classpath), *map(str, sources)]
        built(run(cmd, project), f"javac ({name})")
        (classes / ".built").touch()
    return classes


def build_java(_: Path) -> list[str]:
    """The program on the RabbitMQ Java client that java/pom.xml pins."""
    _require_jdk()
    with locked("java") as root:
        classpath = _maven_classpath(HERE / "java", root)
        classes = _compiled("java-classes", HERE / "java", classpath, root)
    return [*JAVA, "-cp", ":".join([str(classes), *classpath]), "Scenario"]


def build_java_debian(_: Path) -> list[str]:
    """The same program on Debian's RabbitMQ Java client 5.0.0."""
    _require_jdk()
    missing = [str(jar) for jar in DEBIAN_JAVA_JARS if not jar.exists()]
    if missing:
        pytest.skip(f"no RabbitMQ Java client: {missing} (apt-get install librabbitmq-client-java)")
    classpath = [str(jar) for jar in DEBIAN_JAVA_JARS]
    with locked("java-debian") as root:
        classes = _compiled("java-debian-classes", HERE / "java", classpath, root)
    return [*JAVA, "-cp", ":".join([str(classes), *classpath]), "Scenario"]


def build_spring(_: Path) -> list[str]:
    """The Spring AMQP program (spring/pom.xml)."""
    _require_jdk()
    with locked("spring") as root:
        classpath = _maven_classpath(HERE / "spring", root)
        classes = _compiled("spring-classes", HERE / "spring", classpath, root)
    return [*JAVA, "-cp", ":".join([str(classes), *classpath]), "SpringScenario"]


def build_java_ha_failover() -> list[str]:
    """tests/ha/java's program on the RabbitMQ Java client that java/pom.xml pins (one classpath for both)."""
    _require_jdk()
    project = HERE.parents[1] / "ha" / "java"
    with locked("java") as root:
        classpath = _maven_classpath(HERE / "java", root)
        classes = _compiled("java-ha-classes", project, classpath, root)
    return ["java", "-cp", ":".join([str(classes), *classpath]), "HaFailover"]
