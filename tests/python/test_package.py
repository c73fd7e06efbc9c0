"""The package around the module (no GPU): pyproject.toml, the one version, and the type stubs.

`pip install .` itself runs on a GPU host (scripts/test_pip_install.sh); CI, where
scikit-build-core is not packaged, checks what can be checked without it: the pyproject parses and
names the CMake build, its version rule reads the version the module reports, and the stubs that
are installed with the package name every public attribute of the package, of the extension and
of their classes. The install rules themselves are ctest's python_package_install.
"""

import ast
import pathlib
import re

import pytest

import flashscope
from flashscope import _core

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(flashscope.__file__).resolve().parent

tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) reads pyproject.toml")


def pyproject():
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


def test_pyproject_builds_the_module_with_the_projects_cmake():
    project = pyproject()
    assert project["build-system"]["build-backend"] == "scikit_build_core.build"
    assert any(r.startswith("scikit-build-core") for r in project["build-system"]["requires"])
    assert any(r.startswith("pybind11") for r in project["build-system"]["requires"])
    assert project["project"]["name"] == "flashscope"
    assert "version" in project["project"]["dynamic"]
    scikit = project["tool"]["scikit-build"]
    assert scikit["cmake"]["targets"] == ["flashscope_python"]
    assert scikit["install"]["components"] == ["python"]
    # A small kernel set by default; -C cmake.define.FLASHSCOPE_KERNEL_SET=... overrides it.
    assert scikit["cmake"]["define"]["FLASHSCOPE_KERNEL_SET"] == "ci"
    assert (ROOT / project["project"]["readme"]).is_file()
    # The CMake side installs into component "python" (its install(...) rules).
    cmake = (ROOT / "explorer/python/CMakeLists.txt").read_text()
    assert re.search(r"install\(TARGETS flashscope_python .*COMPONENT python", cmake, re.S)


def test_one_version_from_cmakelists_to_metadata_and_module():
    rule = pyproject()["tool"]["scikit-build"]["metadata"]["version"]
    assert rule["provider"] == "scikit_build_core.metadata.regex"
    match = re.search(rule["regex"], (ROOT / rule["input"]).read_text())
    assert match, f"pyproject.toml's version regex finds nothing in {rule['input']}"
    assert flashscope.__version__ == match.group("value") == _core.__version__
    assert re.fullmatch(r"[0-9]+(\.[0-9]+)*", flashscope.__version__)


def stub_names(path):
    """Top-level names a stub defines, and the members of each class it defines."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names, classes = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname for alias in node.names if alias.asname)
    return names, classes


def public(names):
    return {name for name in names if not name.startswith("_")}


def class_members(cls):
    """What the class itself adds, beyond object's attributes and pybind11's internals."""
    return {name for name in dir(cls)
            if name not in dir(object) and not name.startswith("_pybind11")
            and name not in ("__module__", "__dict__", "__weakref__")}


@pytest.mark.parametrize("module, stub", [(flashscope, "__init__.pyi"), (_core, "_core.pyi")])
def test_stubs_name_every_public_attribute(module, stub):
    path = PACKAGE / stub
    assert path.is_file(), f"{path} is not next to the imported package"
    names, classes = stub_names(path)
    runtime = public(dir(module)) - {"annotations"}
    if module is flashscope:
        runtime -= {"_core"}
        assert set(flashscope.__all__) <= names
    assert public(names) == runtime, (
        f"{stub}: missing {sorted(runtime - public(names))}, "
        f"not in the module {sorted(public(names) - runtime)}")
    assert "__version__" in names
    for name, members in classes.items():
        cls = getattr(module, name)
        missing = class_members(cls) - members
        assert not missing, f"{stub}: class {name} lacks {sorted(missing)}"
        extra = {m for m in members - class_members(cls) if not m.startswith("__")}
        assert not extra, f"{stub}: class {name} names {sorted(extra)}, which it lacks"


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").is_file()  # PEP 561: type checkers read the .pyi files
