"""mojodex_core is the framework-free core: importing every module of it never imports Flask."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.foundation.conftest import REPO_ROOT, clean_env

PROBE = r"""
import importlib, json, pkgutil, sys
import mojodex_core

failed = []
names = []
def onerror(name):
    failed.append(name)
for info in pkgutil.walk_packages(mojodex_core.__path__, "mojodex_core.", onerror=onerror):
    names.append(info.name)
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed.append(f"{info.name}: {type(exc).__name__}: {exc}")
WEB = ("flask", "flask_restful", "flask_socketio", "werkzeug", "backend")
web = sorted(m for m in sys.modules if m.split(".")[0] in WEB)
print(json.dumps({"modules": names, "failed": failed, "web": web}))
"""


def test_importing_every_mojodex_core_module_never_imports_flask():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO_ROOT,
        env=clean_env(),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failed"] == [], report["failed"]
    modules = set(report["modules"])
    # The walk really covered the package (and its subpackages).
    assert {
        "mojodex_core.config",
        "mojodex_core.users",
        "mojodex_core.task_loader",
        "mojodex_core.task_view",
        "mojodex_core.db.models",
        "mojodex_core.task_spec.api",
    } <= modules
    assert len(modules) >= 20
    assert report["web"] == [], f"mojodex_core pulled in: {report['web']}"
