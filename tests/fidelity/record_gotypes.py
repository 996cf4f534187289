#!/usr/bin/env python3
"""Records, from Kubernetes' Go source, what the OpenAPI documents do not say about the built-in
kinds' fields: the Go type encoding/json names in its errors (`v1.Protocol`, `v1.ResourceList`,
not `string`) and which zero values the Go encoder leaves out (`omitempty` on a bool, string,
number, slice or map that is not a pointer: `hostIPC: false` is stored as no field at all).

  record_gotypes.py KUBERNETES_SOURCE      (the oracle's: ~/.cache/k8s-oracle/src)

Writes data/gotypes/fields.json: for each component of data/openapi/*.json that is a Go struct,
{json name: [Go type as reflect prints it, zero, place(, "ptr")]} where zero is what omitempty drops
("bool", "string", "number", "slice", "map"), "null" (a pointer without omitempty: nil is encoded as
null) or "" (kept: no omitempty, a pointer with it, or a struct), place
the field's position in the struct (inlined members where they are inlined), and "ptr" marks a
pointer (the printed type names the element: a nil pointer encodes as null, or is omitted).
"""
import glob
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "data", "openapi")
OUT = os.path.join(REPO, "data", "gotypes", "fields.json")

# Types of other packages that the API types use, by their underlying kind.
FOREIGN = {"resource.Quantity": "struct", "intstr.IntOrString": "struct", "types.UID": "string",
           "runtime.RawExtension": "struct", "runtime.Object": "iface"}
BUILTIN = {"string": "string", "bool": "bool", "byte": "number", "int": "number", "int32": "number",
           "int64": "number", "uint64": "number", "float64": "number"}


def package_dir(src, component):
    """io.k8s.api.core.v1.PodSpec -> (<src>/staging/src/k8s.io/api/core/v1, PodSpec)."""
    parts = component.split(".")
    if parts[:2] != ["io", "k8s"]:
        return None, None
    return os.path.join(src, "staging", "src", "k8s.io", *parts[2:-1]), parts[-1]


class Package:
    def __init__(self, path):
        self.name = os.path.basename(path)
        self.structs, self.named, self.imports, self.import_paths = {}, {}, {}, {}
        for f in sorted(glob.glob(os.path.join(path, "*.go"))):
            if f.endswith("_test.go") or os.path.basename(f).startswith(("zz_generated", "generated.")):
                continue
            self.parse(open(f).read())

    def parse(self, text):
        for alias, path in re.findall(r'^\s*(\w+)?\s*"(k8s\.io/[^"]+)"', text, re.M):
            self.imports[alias or path.rsplit("/", 1)[1]] = path.rsplit("/", 1)[1]
            self.import_paths[alias or path.rsplit("/", 1)[1]] = path
        for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
            fields = []
            for line in m.group(2).splitlines():
                f = re.match(r'\s*(?:(\w+)\s+)?(\S+)\s+`json:"([^"]*)"', line)
                if f:
                    fields.append((f.group(1), f.group(2), f.group(3)))
                elif re.match(r"\s*(\*?[\w.]+)\s*$", line) and not line.strip().startswith("//"):
                    fields.append((None, line.strip(), ",inline"))  # embedded without a tag
            self.structs[m.group(1)] = fields
        for name, under in re.findall(r"^type (\w+) ([^\s{(][^\n{]*)$", text, re.M):
            self.named[name] = under.strip()


class Source:
    def __init__(self, src):
        self.src, self.packages = src, {}

    def package(self, path):
        if path not in self.packages:
            self.packages[path] = Package(path) if os.path.isdir(path) else None
        return self.packages[path]

    def printed(self, pkg, t):
        """A Go type as reflect.Type.String() prints it (the pointer stripped: the decoder's errors name the element)."""
        t = t.lstrip("*")
        if t.startswith("[]"):
            return "[]" + ("uint8" if t == "[]byte" else self.printed(pkg, t[2:]))
        m = re.match(r"map\[([^\]]+)\](.*)", t)
        if m:
            return "map[%s]%s" % (self.printed(pkg, m.group(1)), self.printed(pkg, m.group(2)))
        if t in BUILTIN or t.startswith("interface"):
            return t
        if "." in t:
            alias, name = t.split(".", 1)
            return "%s.%s" % (pkg.imports.get(alias, alias), name)
        return "%s.%s" % (pkg.name, t)

    def kind(self, pkg, pkg_path, t, depth=0):
        """The underlying kind of Go type t: struct, string, bool, number, slice, map, ptr, iface."""
        if t.startswith("*"):
            return "ptr"
        if t.startswith("[]"):
            return "slice"
        if t.startswith("map["):
            return "map"
        if t in BUILTIN:
            return BUILTIN[t]
        if depth > 8:
            return "struct"
        if "." in t:
            alias, name = t.split(".", 1)
            printed = "%s.%s" % (pkg.imports.get(alias, alias), name)
            if t in FOREIGN or printed in FOREIGN:
                return FOREIGN.get(t) or FOREIGN[printed]
            # Another package of the API (corev1.ResourceList in node/v1, metav1's types): its own
            # definition says.
            path = pkg.import_paths.get(alias, "")
            other = self.package(os.path.join(self.src, "staging", "src", path)) if path.startswith("k8s.io/") else None
            if other:
                return self.kind(other, None, name, depth + 1)
            return "struct"
        if t in pkg.structs:
            return "struct"
        if t in pkg.named:
            return self.kind(pkg, pkg_path, pkg.named[t], depth + 1)
        return "struct"

    def fields(self, pkg, struct, depth=0):
        out = {}
        for _, t, tag in pkg.structs.get(struct, []):
            name, _, opts = tag.partition(",")
            if "inline" in opts.split(","):
                inner = t.lstrip("*")
                target = pkg
                if "." in inner:
                    alias, inner = inner.split(".", 1)
                    target = self.package(os.path.join(self.src, "staging", "src", "k8s.io", "apimachinery", "pkg",
                                                       "apis", "meta", "v1")) if alias == "metav1" else None
                if target and depth < 4:
                    out.update(self.fields(target, inner, depth + 1))
                continue
            if name == "-" or not name:
                continue
            kind = self.kind(pkg, None, t)
            omitempty = "omitempty" in opts.split(",")
            omit = omitempty and kind in ("bool", "string", "number", "slice", "map")
            # A pointer without omitempty: nil encodes as null (TypedLocalObjectReference.apiGroup).
            zero = kind if omit else "null" if t.startswith("*") and not omitempty else ""
            out[name] = [self.printed(pkg, t), zero] + (["ptr"] if t.startswith("*") else [])
        return out

    def ordered_fields(self, pkg, struct):
        """fields() with each field's place in the struct (inline members where they are inlined): the
        order runtime.DefaultUnstructuredConverter visits them in, so the first error it meets."""
        return {name: entry[:2] + [i] + entry[2:] for i, (name, entry) in enumerate(self.fields(pkg, struct).items())}


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    source = Source(os.path.expanduser(argv[0]))
    out = {}
    for doc in sorted(glob.glob(os.path.join(DATA, "*_v1.json"))):
        for component in sorted(json.load(open(doc))["components"]["schemas"]):
            path, struct = package_dir(source.src, component)
            pkg = source.package(path) if path else None
            if pkg and struct in pkg.structs:
                out[component] = source.ordered_fields(pkg, struct)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=0, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    print("recorded %d structs in %s" % (len(out), OUT))


if __name__ == "__main__":
    main(sys.argv[1:])
