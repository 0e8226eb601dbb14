"""Build step: the wheel carries the page templates inside the package, as measure/site/templates/.

templates/ at the top of the checkout stays their only source; this copies it
into the build (never into the checkout). An editable install reads the
checkout's templates/ directly, so it skips the copy. Metadata lives in
pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TEMPLATES = Path(__file__).resolve().parent / "templates"
PACKAGED = ("measure", "site", "templates")
"""Where render.PACKAGED_TEMPLATES looks, relative to the installed package root."""


class BuildPyWithTemplates(build_py):
    def _templates(self) -> list[tuple[Path, Path]]:
        if self.editable_mode:
            return []
        target = Path(self.build_lib, *PACKAGED)
        return [(src, target / src.name) for src in sorted(TEMPLATES.glob("*.j2"))]

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install reads the checkout's templates/
        pairs = self._templates()
        if not pairs:
            raise SystemExit(f"{TEMPLATES}: no page templates (*.j2) to put in the wheel")
        target = pairs[0][1].parent
        shutil.rmtree(target, ignore_errors=True)  # a reused build/ folder keeps no template deleted since
        target.mkdir(parents=True)
        for src, dst in pairs:
            self.copy_file(str(src), str(dst))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *(str(dst) for _, dst in self._templates())]


setup(cmdclass={"build_py": BuildPyWithTemplates})
