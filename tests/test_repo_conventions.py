"""The conventions by which people find, cite and build on the repository: the citation file is
valid Citation File Format 1.2.0 and cites the five papers as references.bib does; the workflows
are valid against the GitHub Actions workflow schema and do what the README says (tests on every
push and pull request, the book built and published from main); the licences are in place.

The schemas are the ones check-jsonschema bundles (`--builtin-schema`), so nothing here needs the
network. Its CFF schema is the format's own 1.2.0 schema, the one `cffconvert --validate` uses
(they differ only in a typo of one description).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
PAPERS = ("tad2023", "ramsis2024", "kvcache2025", "kairos2023", "shepherd2023")


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True, text=True, timeout=120)


def _workflow(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def _steps(doc: dict) -> list[dict]:
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


# ------------------------------------------------------------------------------------ citation

def test_citation_file_is_valid_cff_1_2_0():
    proc = _check_jsonschema("vendor.citation-file-format", ROOT / "CITATION.cff")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_rejects_an_invalid_citation_file(tmp_path):
    """The check can fail: the same file without its required `authors` is refused."""
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    del cff["authors"]
    bad = tmp_path / "CITATION.cff"
    bad.write_text(yaml.safe_dump(cff), encoding="utf-8")
    proc = _check_jsonschema("vendor.citation-file-format", bad)
    assert proc.returncode != 0 and "authors" in proc.stdout + proc.stderr


def _plain(text: str) -> str:
    """A BibTeX title without its case-protecting braces."""
    return re.sub(r"[{}]", "", text)


def test_citation_references_are_the_five_papers_of_references_bib():
    from pybtex.database import parse_file

    bib = parse_file(str(ROOT / "references.bib")).entries
    refs = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))["references"]
    assert len(refs) == len(PAPERS)
    for key, ref in zip(PAPERS, refs, strict=True):
        entry = bib[key]
        assert ref["title"] == _plain(entry.fields["title"]), key
        assert str(ref["year"]) == entry.fields["year"], key
        bib_names = [str(p.last_names[0]) for p in entry.persons["author"]]
        cff_names = [a.get("family-names", a.get("name")) for a in ref["authors"]]
        assert cff_names == [_plain(n) for n in bib_names], key
        assert ref.get("doi") == entry.fields.get("doi"), key


# ----------------------------------------------------------------------------------- workflows

def test_workflows_are_valid_against_the_github_workflow_schema():
    proc = _check_jsonschema("vendor.github-workflows", WORKFLOWS / "test.yml", WORKFLOWS / "book.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_rejects_an_invalid_workflow(tmp_path):
    """The check can fail: a job without `runs-on` is refused."""
    doc = yaml.safe_load((WORKFLOWS / "test.yml").read_text(encoding="utf-8"))
    del doc["jobs"]["test"]["runs-on"]
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert _check_jsonschema("vendor.github-workflows", bad).returncode != 0


def test_the_test_workflow_runs_make_test_on_every_push_and_pull_request():
    doc = _workflow("test.yml")
    assert set(doc["on"]) >= {"push", "pull_request"}
    assert doc["on"]["push"] is None and doc["on"]["pull_request"] is None  # no branch filter
    steps = _steps(doc)
    setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"] == {"python-version": "3.11", "cache": "pip",
                             "cache-dependency-path": "requirements.txt"}
    assert any(s.get("run", "").startswith("make test") for s in steps)


def test_the_book_workflow_builds_on_main_weekly_and_publishes_the_html():
    doc = _workflow("book.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    assert doc["on"]["schedule"][0]["cron"].split()[2:] == ["*", "*", "1"]   # weekly, Mondays
    assert doc["permissions"]["pages"] == "write" and doc["permissions"]["id-token"] == "write"
    build, deploy = doc["jobs"]["build"], doc["jobs"]["deploy"]
    assert any(s.get("run", "").startswith("make book") for s in build["steps"])
    upload = next(s for s in build["steps"]
                  if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])


def test_make_book_and_make_test_need_no_workflow():
    """The workflows call the Makefile; nothing in the Makefile or the CI entry point reads them."""
    for path in (ROOT / "Makefile", ROOT / ".ci" / "run"):
        assert ".github" not in path.read_text(encoding="utf-8"), path


# ------------------------------------------------------------------------------------ licences

def test_licences_are_in_place_and_named_in_the_readme():
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    cc = (ROOT / "LICENSES" / "CC-BY-4.0.txt").read_text(encoding="utf-8")
    assert cc.startswith("Attribution 4.0 International")
    assert "Creative Commons may be contacted at creativecommons.org." in cc
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Licence and citation", 1)
    assert len(section) == 2, "the README has no 'Licence and citation' section"
    for target in ("LICENSE", "LICENSES/CC-BY-4.0.txt", "CITATION.cff"):
        assert f"]({target})" in section[1], target
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["license"] == ["MIT", "CC-BY-4.0"]


@pytest.mark.parametrize("folder", ["profiles", "traces", "paper"])
def test_each_data_folder_states_its_terms(folder):
    assert "Terms of use" in (ROOT / "data" / folder / "README.md").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- execution status

def test_the_book_has_an_execution_status_page_linked_from_the_front_page():
    assert "```{nb-exec-table}" in (ROOT / "book" / "status.md").read_text(encoding="utf-8")
    assert "book/status" in (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "{doc}`status`" in (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
