"""`python -m mojodex_core.task_spec > docs/task_spec.schema.json` prints the JSON Schema of a task spec.

`python -m mojodex_core.task_spec FILE...` validates spec files instead and exits 1 on errors.
"""

from __future__ import annotations

import sys

from . import SpecError, load_spec_file, render_json_schema


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    if not args:
        sys.stdout.write(render_json_schema())
        return 0
    failed = 0
    for name in args:
        try:
            spec = load_spec_file(name)
        except SpecError as exc:
            failed += 1
            print(f"{name}: {len(exc.errors)} error(s)", file=sys.stderr)
            for issue in exc.errors:
                print(f"  {issue}", file=sys.stderr)
            continue
        print(f"{name}: ok ({spec.task_type} '{spec.name_for_system}')")
        for issue in spec.warnings:
            print(f"  warning: {issue}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
