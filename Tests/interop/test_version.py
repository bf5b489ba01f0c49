"""The gateway's version: one string (BuildInfo.version) printed by `--version`, carried by
`appstore_gateway_build_info`, and repeated by the image, the manifests and CHANGELOG.md, all equal."""
import os
import re
import subprocess

import yaml

from conftest import GATEWAY_BIN, ROOT
from test_observability import samples, scrape

SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?")


def version():
    """What `appstore-gateway --version` prints, checked to be a lone semantic version."""
    run = subprocess.run([GATEWAY_BIN, "--version"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    printed = run.stdout.strip()
    assert SEMVER.fullmatch(printed) and run.stdout == printed + "\n", run.stdout
    return printed


def test_version_flag_prints_the_build_info_metrics_version(gateway):
    printed = version()
    (info,) = samples(scrape(gateway)[1], "appstore_gateway_build_info")
    assert re.search(r'\bversion="([^"]*)"', info).group(1) == printed


def test_help_shows_the_version_and_the_flag():
    run = subprocess.run([GATEWAY_BIN, "--help"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert f"version {version()}" in run.stdout
    assert re.search(r"^\s+--version\s+Show the version\.$", run.stdout, re.M), run.stdout


def test_the_major_version_is_the_contracts():
    major = int(version().split(".")[0])
    packages = set()
    for name in os.listdir(os.path.join(ROOT, "proto", "appstore", "gateway")):
        packages.add(name)
    assert packages == {f"v{major}"}, packages


def test_the_image_and_the_manifests_carry_the_same_version():
    printed = version()
    with open(os.path.join(ROOT, "deploy", "Dockerfile")) as f:
        (arg,) = re.findall(r"^ARG VERSION=(\S+)$", f.read(), re.M)
    assert arg == printed
    for kustomization in ("base", os.path.join("overlays", "example")):
        with open(os.path.join(ROOT, "deploy", "kubernetes", kustomization, "kustomization.yaml")) as f:
            (image,) = yaml.safe_load(f)["images"]
        assert image["newTag"] == printed, kustomization


def test_the_changelogs_newest_release_is_this_version():
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", f.read(), re.M)
    assert headings[0] == ("Unreleased", "")
    releases = headings[1:]
    assert releases and all(SEMVER.fullmatch(name) and date for name, date in releases), releases
    assert releases[0][0] == version()
