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


def header_defines(text):
    """Every #define of the header: its value if literal - ints (evaluated, so
    (1U << 4) - 1 works) and strings - else None."""
    defines = {}
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for name, body in re.findall(r"^#define\s+(\w+)[ \t]+(.+?)\s*$", text, re.M):
        body = body.strip()
        defines[name] = None
        if re.fullmatch(r'"[^"]*"', body):
            defines[name] = body[1:-1]
            continue
        expr = re.sub(r"(?<=[0-9a-fA-F])[uU]L{0,2}\b", "", body)
        if re.fullmatch(r"[0-9a-fA-FxX()<>|+\- \t]+", expr):
            defines[name] = eval(expr, {"__builtins__": {}})  # digits and operators only
    return defines


def c_name(prefix, name):
    return (prefix + name).upper().replace("-", "_")


enums = header_enum_values(header)
defines = header_defines(header)
errors = []
family = spec["name"]


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
declared_ops = {c_name(ops["name-prefix"], op["name"]) for op in ops["list"]}
for name in enums:
    stem = c_name(ops["name-prefix"], "")
    if name.startswith(stem) and name not in declared_ops and name != stem + "UNSPEC":
        errors.append(f"{name}: in the header, missing from the spec")

definitions = spec.get("definitions", [])
for d in definitions:
    if d["type"] == "const":
        name = c_name(family + "-", d["name"])
        if name not in defines:
            errors.append(f"const {d['name']}: {name} missing from the header")
        elif defines[name] != d["value"]:
            errors.append(f"const {d['name']}: spec {d['value']!r}, header {defines[name]!r}")
        continue
    # enums and flags: entry names and values, YNL's rules (flags: bit numbers)
    prefix = d.get("name-prefix", f"{family}-{d['name']}-")
    value = d.get("value-start", 0) - 1
    names = set()
    mask = 0
    for entry in d["entries"]:
        entry = entry if isinstance(entry, dict) else {"name": entry}
        value = entry.get("value", value + 1)
        name = c_name(prefix, entry["name"])
        names.add(name)
        if d["type"] == "enum":
            expect(name, value)
        elif name not in defines:
            errors.append(f"{name}: flag in the spec, missing from the header")
        elif defines[name] != 1 << value:
            errors.append(f"{name}: spec says {1 << value}, header says {defines[name]}")
        mask |= 1 << value
    stem = c_name(prefix, "")
    if d["type"] == "enum":
        extra = [n for n in enums if n.startswith(stem) and n not in names]
        if d.get("render-max"):
            if enums.get("__" + stem + "MAX") != value + 1 or stem + "MAX" not in defines:
                errors.append(f"enum {d['name']}: __{stem}MAX / {stem}MAX missing or wrong")
    else:
        extra = [n for n in defines if n.startswith(stem) and n not in names and n != stem + "ALL"]
        if defines.get(stem + "ALL") != mask:
            errors.append(f"flags {d['name']}: {stem}ALL is {defines.get(stem + 'ALL')}, the entries make {mask}")
    errors += [f"{n}: in the header, missing from enum {d['name']} of the spec" for n in extra]

# references inside the spec resolve
set_names = {a["name"] for a in spec["attribute-sets"]}
def_names = {d["name"] for d in definitions}
group_names = [g["name"] for g in spec.get("mcast-groups", {}).get("list", [])]
for aset in spec["attribute-sets"]:
    for attr in aset["attributes"]:
        if "nested-attributes" in attr and attr["nested-attributes"] not in set_names:
            errors.append(f"{aset['name']}.{attr['name']}: no attribute set {attr['nested-attributes']}")
        if "enum" in attr and attr["enum"] not in def_names:
            errors.append(f"{aset['name']}.{attr['name']}: no definition {attr['enum']}")
for op in ops["list"]:
    if "mcgrp" in op and op["mcgrp"] not in group_names:
        errors.append(f"operation {op['name']}: no multicast group {op['mcgrp']}")

# multicast groups: #define GAPPACE_MCGRP_NAME "name", both ways
for group in group_names:
    name = c_name(family + "-mcgrp-", group)
    if defines.get(name) != group:
        errors.append(f"mcast group {group}: want #define {name} \"{group}\", header has {defines.get(name)!r}")
for name in defines:
    if name.startswith(c_name(family + "-mcgrp-", "")) and defines[name] not in group_names:
        errors.append(f"{name}: multicast group in the header, missing from the spec")

if errors:
    print("spec and header disagree:\n  " + "\n  ".join(errors))
    sys.exit(1)
print(f"ok: {sum(len(a['attributes']) for a in spec['attribute-sets'])} attributes, {len(ops['list'])} operations, "
      f"{len(definitions)} definitions, {len(group_names)} multicast groups agree")
