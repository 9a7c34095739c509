"""A PEP 517 build backend for gpushare_client, standard library only.

`pip install ./python` then works offline in a plain venv: pip's build
isolation has nothing to download (setuptools is not needed, and Python 3.12
venvs no longer carry it). It builds the one-module wheel (and an sdist);
name, version and description come from pyproject.toml.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MODULE = "gpushare_client.py"


def _project():
    text = open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8").read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(name):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % name, section, re.M)
        return m.group(1) if m else ""

    return field("name"), field("version"), field("description"), field("requires-python")


def _metadata():
    name, version, summary, requires = _project()
    readme = open(os.path.join(_HERE, "README.md"), encoding="utf-8").read()
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version, "Summary: " + summary]
    if requires:
        lines.append("Requires-Python: " + requires)
    lines += ["Description-Content-Type: text/markdown", "", readme]
    return "\n".join(lines)


def _dist_info():
    name, version, _, _ = _project()
    return "%s-%s" % (re.sub(r"[-_.]+", "_", name), version)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    base = _dist_info()
    files = {
        _MODULE: open(os.path.join(_HERE, _MODULE), "rb").read(),
        base + ".dist-info/METADATA": _metadata().encode(),
        base + ".dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: gpushare_build\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(p, d) for p, d in files.items()] + [base + ".dist-info/RECORD,,"]
    files[base + ".dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = base + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    base = _dist_info()
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", _MODULE, "build_backend/gpushare_build.py"):
            t.add(os.path.join(_HERE, rel), arcname=base + "/" + rel)
        pkg = ("Metadata-Version: 2.1\n" + _metadata().split("\n", 1)[1]).encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(pkg)
        t.addfile(info, io.BytesIO(pkg))
    return name
