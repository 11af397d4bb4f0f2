"""What the distribution declares about itself: the licence it names ships as a file, and
the Python versions it is tested on are the ones its classifiers list."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


class TestPackaging:
    def test_the_licence_ships_as_a_file(self) -> None:
        """`license = "MIT"` comes with the MIT text, named in license-files (hatchling puts
        it in the wheel and the sdist)."""
        assert PROJECT["license"] == "MIT"
        assert PROJECT["license-files"] == ["LICENSE"]
        text = (ROOT / "LICENSE").read_text(encoding="utf-8")
        assert text.startswith("MIT License\n")
        assert re.search(r"^Copyright \(c\) \d{4} The mini-harness authors$", text, re.M)
        assert "Permission is hereby granted, free of charge" in text

    def test_classifiers_name_the_supported_pythons(self) -> None:
        """One Trove classifier per minor version from requires-python up to 3.13."""
        assert PROJECT["requires-python"] == ">=3.11"
        versions = sorted(
            classifier.rpartition(" :: ")[2]
            for classifier in PROJECT["classifiers"]
            if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", classifier)
        )
        assert versions == ["3.11", "3.12", "3.13"]
