#!/usr/bin/python3
"""Records go_decode_errors.json: encoding/json's syntax errors and encoding/base64's decode errors
for the inputs below, from Go itself (go_decode_errors.go, run with the Go toolchain of
../shared/oracle: GO=~/.cache/k8s-oracle/toolchain/usr/lib/go-1.23/bin/go). The embedded server's
decoder must word them alike (typecheck_test.cpp)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JSON = ["", " ", "{", "[", "\"", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,", "{\"a\" 1}", "{1:2}", "[1,]", "[1 2]",
        "tru", "trux", "nul", "nulL", "fals", "-", "-a", "01", "1.", "1.e5", "1e", "1e+", "1e+x", "\"\\x\"",
        "\"\\u12g4\"", "\"a\nb\"", "\"a\tb\"", "\u00e9", "'x'", "{}x", "[] ]", "{\"a\":1}}", "\x01", "\x7f", "x", "@",
        "{\"a\":tru}", "[-]", "{,}", "[,1]", "{\"a\":1 \"b\":2}", "[1}", "{\"a\"]", "\\", "\"\\", "\"\\u", "\"\\u00",
        "--1", "+1", ".5", "0x10", "NaN", "{\"a\":[1,2}", "[{]", "{\"a\":{\"b\":}}", "\"ok\"", "{\"a\":[true,false,null]}",
        "  [1, 2.5e-3, -0, \"x\\n\\u0041\"]  ", "{\"\\u00e9\":1}", "[1]\n", "1 2", "\"\\/\"", "{\"a\":\"\x1f\"}",
        "\u00a0", "\u00ff", "\u2028"]
BASE64 = ["", "A", "AB", "ABC", "ABCD", "AB==", "ABC=", "A===", "AB=C", "AB==C", "ABCD=", "AB\n==", "AB=\n=", "TCP",
          "x y", "Zm9v\n", "\r\nZm9v", "Zm9vYg", "Zm9vYg=", "=", "==", "Zm9vYmFy====", "****", "Zm9vYmFy", "Zm9vYmE=",
          "Zm9vYmFyYmF6cXV4", "Zm9v\nYmFy", "Zm9vYm=y", "eA==", "eA=", "Never", "also binary data's key",
          "example.com/gpu", "Zm9vYmFyYmF6cXV4!", "Zm9vYmFyYmF6cXV=", "AAAAAAAAAAAAAAAAAA=="]


def main():
    go = os.environ.get("GO", os.path.expanduser("~/.cache/k8s-oracle/toolchain/usr/lib/go-1.23/bin/go"))
    items = [{"json": s} for s in JSON] + [{"base64": s} for s in BASE64]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GOCACHE=os.path.join(tmp, "cache"), GOPATH=os.path.join(tmp, "gopath"),
                   GOTOOLCHAIN="local", GO111MODULE="off")
        out = subprocess.run([go, "run", os.path.join(HERE, "go_decode_errors.go")], input=json.dumps(items).encode(),
                             capture_output=True, env=env, check=True).stdout
    with open(os.path.join(HERE, "go_decode_errors.json"), "w") as f:
        f.write(json.dumps(json.loads(out), indent=1, ensure_ascii=True) + "\n")
    print("recorded %d inputs" % len(items))


if __name__ == "__main__":
    sys.exit(main())
