"""Reading a run's report.md, for the scripts that arrange a run's tables."""

import pathlib
import sys


def section(directory, heading_start):
    """The markdown table under the report.md heading that starts with `heading_start`: the
    heading's text and the table's lines."""
    lines = (pathlib.Path(directory) / "report.md").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## " + heading_start):
            table = []
            for row in lines[i + 1 :]:
                if row.startswith("|"):
                    table.append(row)
                elif table:
                    break
            return line[3:], table
    sys.exit(f"{directory}/report.md has no section '{heading_start}'")
