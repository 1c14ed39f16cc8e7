#!/usr/bin/env python3
"""The YNL spec (Documentation/netlink/gappace.yaml) and the uapi header
(kmod/uapi/linux/gappace.h) must describe the same family: same names, same
numbers. Fails with the list of every mismatch."""
import re
import sys
from pathlib import Path

import yaml

root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
spec = yaml.safe_load((root / "Documentation/netlink/gappace.yaml").read_text())
header = (root / "kmod/uapi/linux/gappace.h").read_text()


def header_enum_values(text):
    """Every enumerator of every enum in the header, with its value."""
    values = {}
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for body in re.findall(r"enum\s*\w*\s*\{(.*?)\}", text, re.S):
        n = -1
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, value = item.partition("=")
            n = int(value.strip(), 0) if value.strip() else n + 1
            values[name.strip()] = n
    return values


def c_name(prefix, name):
    return (prefix + name).upper().replace("-", "_")


enums = header_enum_values(header)
errors = []


def expect(name, value):
    if name not in enums:
        errors.append(f"{name}: in the spec, missing from the header")
    elif enums[name] != value:
        errors.append(f"{name}: spec says {value}, header says {enums[name]}")


if spec["name"] != "gappace" or f'#define GAPPACE_GENL_NAME\t"{spec["name"]}"' not in header:
    errors.append("family name differs")

for aset in spec["attribute-sets"]:
    prefix = aset["name-prefix"]
    value = 0
    for attr in aset["attributes"]:
        value = attr.get("value", value + 1)
        expect(c_name(prefix, attr["name"]), value)
    # nothing in the header that the spec lacks
    declared = {c_name(prefix, a["name"]) for a in aset["attributes"]}
    stem = c_name(prefix, "")
    for name in enums:
        if name.startswith(stem) and not name.startswith("__") and name != stem + "UNSPEC" \
                and name != stem + "MAX" and name not in declared \
                and not any(name.startswith(c_name(p["name-prefix"], "")) and len(p["name-prefix"]) > len(prefix)
                            for p in spec["attribute-sets"]):
            errors.append(f"{name}: in the header, missing from the spec")

ops = spec["operations"]
value = 0
for op in ops["list"]:
    value = op.get("value", value + 1)
    expect(c_name(ops["name-prefix"], op["name"]), value)

for const in spec.get("definitions", []):
    if const["type"] == "const":
        m = re.search(r"#define\s+GAPPACE_" + const["name"].upper().replace("-", "_") + r"\s+\(?([0-9xX]+)U?\s*(<<\s*(\d+))?\)?", header)
        if not m:
            errors.append(f"const {const['name']}: missing from the header")
        else:
            v = int(m.group(1), 0) << (int(m.group(3)) if m.group(3) else 0)
            if v != const["value"]:
                errors.append(f"const {const['name']}: spec {const['value']}, header {v}")

if errors:
    print("spec and header disagree:\n  " + "\n  ".join(errors))
    sys.exit(1)
print(f"ok: {sum(len(a['attributes']) for a in spec['attribute-sets'])} attributes, {len(ops['list'])} operations agree")
