"""The build backend of dsh-client (PEP 517), standard library only.

It exists so ``pip install ./python`` needs nothing from the network: setuptools in a fresh venv cannot
build a wheel without the separate ``wheel`` package, and fetching a backend needs an index. A wheel
of this pure-Python package is a zip of ``dsh_client/`` plus the three ``.dist-info`` files.
"""

import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "dsh_client"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()

    def field(name):
        match = re.search(r'^%s = "([^"]*)"$' % name, text, re.M)
        if not match:
            raise RuntimeError("pyproject.toml: [project] %s is missing" % name)
        return match.group(1)

    return field("name"), field("version"), field("description"), field("requires-python")


def _dist_info():
    name, version, description, requires = _project()
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    metadata = (
        "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
        "License: MIT\nDescription-Content-Type: text/markdown\n\n%s"
    ) % (name, version, description, requires, readme)
    wheel = "Wheel-Version: 1.0\nGenerator: dsh-client _build.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return "%s-%s.dist-info" % (name.replace("-", "_"), version), {"METADATA": metadata, "WHEEL": wheel}


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info, files = _dist_info()
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(metadata_directory, info, name), "w", encoding="utf-8") as f:
            f.write(text)
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, _, _ = _project()
    info, files = _dist_info()
    wheel_name = "%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version)
    entries = []
    for file in sorted(os.listdir(os.path.join(HERE, PACKAGE))):
        if file.endswith(".py"):
            with open(os.path.join(HERE, PACKAGE, file), "rb") as f:
                entries.append(("%s/%s" % (PACKAGE, file), f.read()))
    entries += [("%s/%s" % (info, key), text.encode()) for key, text in files.items()]
    record = [_record_line(path, data) for path, data in entries] + ["%s/RECORD,," % info]
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries:
            wheel.writestr(path, data)
        wheel.writestr("%s/RECORD" % info, "\n".join(record) + "\n")
    return wheel_name
