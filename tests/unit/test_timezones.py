"""mojodex_core/timezones.py: which zone database, which names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

PROBE = "import mojodex_core.timezones as t; print(t.is_iana_zone('US/Eastern'), t.is_iana_zone('localtime'))"


def test_the_tzdata_package_gives_its_zones_without_a_system_folder(tmp_path):
    # A host without the zone folder (PYTHONTZPATH naming an empty one): the package's zones, US/Eastern
    # (tzdata-legacy on Debian 13) among them, are accepted all the same.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONTZPATH"}, "PYTHONTZPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.split() == ["True", "False"]


def test_start_up_reads_the_zone_list_once_and_warns_when_there_is_none(monkeypatch, caplog):
    from mojodex_core import timezones

    timezones.iana_zone_names.cache_clear()
    try:
        assert timezones.warm_zone_names() > 400
        assert timezones.iana_zone_names.cache_info().currsize == 1
        assert not [r for r in caplog.records if r.name == "mojodex.timezones"]
        timezones.iana_zone_names.cache_clear()
        monkeypatch.setattr(timezones.zoneinfo, "available_timezones", set)
        assert timezones.warm_zone_names() == 0
        assert "no time zone data" in caplog.text and "pip install tzdata" in caplog.text
    finally:
        timezones.iana_zone_names.cache_clear()
