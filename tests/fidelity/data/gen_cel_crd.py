#!/usr/bin/python3
"""Writes the fidelity scenario "cel"'s CRDs (run from the repository root):
    /usr/bin/python3 tests/fidelity/data/gen_cel_crd.py tests/fidelity/data
cel-crd.json: Gadget with its CEL rules; cel-crd-lax.json: the same without rules or maximums (the
objects of cel-old.yaml are stored under it, then ratcheted); cel-crd-bad.json: rules that do not
compile. The rules are bounded (maxItems, maxLength) to stay within the apiserver's cost budget."""
import json, copy
TRUE_RULES = [
    "-9223372036854775808 < 0", "0x1F == 31", "7u == uint(7)", "2.5e3 == 2500.0", "'a\\tb' == \"a\\u0009b\"",
    "r'a\\tb'.size() == 4", "'''x\"y''' == 'x\"y'", "'\\u00e9' == '\u00e9'", "b'ab' == bytes('ab')", "size(b'\\xff') == 1",
    "self.n * 2 + 1 == 7", "7 / 2 == 3", "-7 % 3 == -1", "1.0 / 0.0 > 1e308", "'ab' + 'c' == 'abc'", "[1] + [2] == [1, 2]",
    "1 < 1.5", "2u > 1", "'a' < 'b'", "self.d == 1.5", "[1, 2] == [1, 2]", "{'a': 1} == {'a': 1}", "dyn(1) == 1.0",
    "dyn(1) != 'a'", "!(false && 1 / 0 == 1)", "1 / 0 == 1 || true", "!(1 / 0 == 1 && false)",
    "(self.n > 2 ? 'big' : 'small') == 'big'", "!has(self.o.x)", "has(self.n)", "self.l[1] == 1", "self.m['k'] == 'v'",
    "2 in self.l", "'k' in self.m", "!('z' in self.m)", "size(self.s) == 12", "self.s.size() == 12", "size('\u00e9') == 1",
    "self.s.startsWith('Hello')", "self.s.endsWith('World')", "self.s.contains(', ')", "self.s.matches('^H.*d$')",
    "self.s.lowerAscii() == 'hello, world'", "self.s.upperAscii() == 'HELLO, WORLD'", "'  x '.trim() == 'x'",
    "'a,b,c'.split(',') == ['a', 'b', 'c']", "'a,b,c'.split(',', 2) == ['a', 'b,c']", "self.ls.join('-') == 'a-b'",
    "self.s.indexOf('o') == 4", "self.s.lastIndexOf('o') == 8", "self.s.substring(7) == 'World'",
    "self.s.substring(0, 5) == 'Hello'", "'abc'.charAt(1) == 'b'", "'aaa'.replace('a', 'b', 2) == 'bba'",
    "self.l.all(x, x > 0)", "self.l.exists(x, x > 2)", "!self.l.exists_one(x, x > 1)", "self.l.map(x, x * 2) == [6, 2, 4]",
    "self.l.filter(x, x > 1) == [3, 2]", "self.l.map(x, x > 1, x * 10) == [30, 20]", "self.m.all(k, k == 'k')",
    "!([0, 1].all(x, 1 / x < 0))", "[1, 0].exists(x, 1 / x > 0)", "!self.l.isSorted()", "self.l.sum() == 6",
    "self.l.min() == 1", "self.l.max() == 3", "[1, 2].indexOf(2) == 1", "int('42') == 42", "int(2.9) == 2",
    "uint(3) == 3u", "double(1) == 1.0", "string(1.5) == '1.5'", "string(self.n) == '3'", "bool('true')",
    "string(1e21) == '1e+21'", "string(1000000.0) == '1e+06'", "self.ios == '50%'", "self.du == duration('90m')",
    "string(self.du) == '5400s'", "self.t + duration('1h') > self.t", "string(self.t) == '2024-01-02T03:04:05Z'",
    "timestamp('2024-01-02T04:04:05+01:00') == self.t", "string(duration('1.5s')) == '1.5s'",
"sets.contains([1, 2], [2])", "!sets.intersects([1], [2])",
    "'a1b22'.findAll('[0-9]+') == ['1', '22']",
    "quantity('1.5Gi').isGreaterThan(quantity('1G'))", "quantity('500m').compareTo(quantity('0.5')) == 0",
    "quantity('1k') == quantity('1000')", "quantity('50k').add(20) == quantity('50020')",
    "sign(quantity('50k').sub(quantity('100k'))) == -1", "quantity('2k').asInteger() == 2000", "!quantity('1.5').isInteger()",
    "quantity('1.5').asApproximateFloat() == 1.5", "!isQuantity('1x')", "type(self.ios) == string", "type(self.n) == int",
    "type(self.l) == list", "self.?n.orValue(1) == 3", "self.o.?x.orValue(7) == 7", "!self.o.?x.hasValue()",
    "'%s-%d-%s'.format(['a', 1, true]) == 'a-1-true'", "'%.2f|%e|%.1e'.format([1234.5, 1234.5, 0.000123]) == '1,234.50|1.234500\u202f\u00d7\u202f10\u2070\u00b3|1.230000\u202f\u00d7\u202f10\u207b\u2070\u2074'",
    "'%s'.format([[1, 'a', 2.5]]) == '[1, \"a\", 2.500000]'", "'%x %X %o %b'.format([255, 'hi', 8, 5]) == 'ff 6869 10 101'",
    "'%s %s'.format([self.t, self.du]) == '2024-01-02T03:04:05Z 5400s'", "'100%%'.format([]) == '100%'",
    "'%s'.format([{'b': 1, 'a': 2}]) == '{\"a\":2, \"b\":1}'", "'%.3f'.format([-1234567.0]) == '-1,234,567.000'",
    "isURL('https://user@example.com:8443/a/b?x=1&y=2&x=3')", "!isURL('example.com')", "isURL('/a/b')",
    "url('HTTPS://Example.com:8443/a').getScheme() == 'https'", "url('https://example.com:8443/a').getHost() == 'example.com:8443'",
    "url('https://[::1]:80/').getHostname() == '::1'", "url('https://example.com:8443/a').getPort() == '8443'",
    "url('https://example.com/a%20b').getEscapedPath() == '/a%20b'",
    "url('https://e.com/?x=1&y=a+b&x=3').getQuery() == {'x': ['1', '3'], 'y': ['a b']}",
    "!isURL('http://exa mple.com/')", "!isURL('http://example.com:80x/')", "url('http://example.com').getEscapedPath() == ''",
    "isIP('1.2.3.4')", "!isIP('1.2.3')", "!isIP('01.2.3.4')", "isIP('2001:db8::1')", "!isIP('::ffff:1.2.3.4')",
    "ip('1.2.3.4').family() == 4", "ip('2001:DB8::1').family() == 6", "string(ip('2001:DB8:0:0::1')) == '2001:db8::1'",
    "ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')", "ip('127.0.0.1').isLoopback()", "ip('::1').isLoopback()",
    "ip('0.0.0.0').isUnspecified()", "ip('169.254.1.1').isLinkLocalUnicast()", "ip('fe80::1').isLinkLocalUnicast()",
    "ip('224.0.0.5').isLinkLocalMulticast()", "ip('ff02::1').isLinkLocalMulticast()", "ip('8.8.8.8').isGlobalUnicast()",
    "!ip('255.255.255.255').isGlobalUnicast()", "ip('10.0.0.1').isGlobalUnicast()", "ip('1.2.3.4') == ip('1.2.3.4')",
    "isCIDR('10.0.0.0/8')", "!isCIDR('10.0.0.0/33')", "!isCIDR('10.0.0.0')", "!isCIDR('10.0.0.0/08')",
    "cidr('10.1.2.3/8').prefixLength() == 8", "string(cidr('10.1.2.3/8').masked()) == '10.0.0.0/8'",
    "string(cidr('10.1.2.3/8').ip()) == '10.1.2.3'", "cidr('10.0.0.0/8').containsIP('10.2.3.4')",
    "!cidr('10.0.0.0/8').containsIP(ip('11.2.3.4'))", "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
    "!cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", "cidr('2001:db8::/32').containsIP('2001:db8:1::1')",
    "string(cidr('2001:DB8::1/32').masked()) == '2001:db8::/32'", "!cidr('10.0.0.0/8').containsIP('2001:db8::1')",
    "self.m[?'k'].orValue('') == 'v'", "self.m[?'z'].orValue('none') == 'none'", "!self.l[?5].hasValue()",
    "self.t.getFullYear() == 2024", "self.t.getMonth() == 0", "self.t.getDate() == 2", "self.t.getDayOfMonth() == 1",
    "self.t.getDayOfWeek() == 2", "self.t.getDayOfYear() == 1", "self.t.getHours() == 3", "self.t.getHours('+02:00') == 5",
    "self.t.getMinutes() == 4", "self.t.getSeconds() == 5", "self.du.getMinutes() == 90", "'a1b22'.find('[0-9]+') == '1'", "self.l.all(x, self.l.exists(y, y == x))",
]
ERR_RULES = [
    "9223372036854775807 + self.n > 0", "-9223372036854775808 - self.n < 0", "1 / (self.n - 3) == 1",
    "1 % (self.n - 3) == 1", "1u - 2u == 0u", "true && 1 / 0 == 1", "self.o.x == 1", "self.l[3] == 1",
    "self.m['z'] == 'v'", "'abc'.substring(2, 1) == ''", "int(self.s) == 1", "uint(self.n - 4) == 1u", "int(self.d * 1e19) == 1",
    "[0].all(x, 1 / x > 0)", "self.ios + 1 == 2", "sign(quantity(self.s)) == 1", "quantity('1.5').asInteger() == 1",
    "url(self.s).getHost() == ''", "ip(self.s).family() == 4", "cidr(self.s).prefixLength() == 1", "url('http://a.com:x/').getHost() == ''",
    "'%d'.format(self.ls) == ''", "'%d %d'.format(self.l) == ''", "'%s'.format([self.n]).size() == 0", "self.s.charAt(20) == ''", "self.n == 4",
]
VALUES = {"type": "object", "properties": {
    "n": {"type": "integer"}, "d": {"type": "number"}, "s": {"type": "string", "maxLength": 20}, "b": {"type": "boolean"},
    "l": {"type": "array", "maxItems": 5, "items": {"type": "integer"}},
    "ls": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 5}},
    "m": {"type": "object", "maxProperties": 5, "additionalProperties": {"type": "string", "maxLength": 5}},
    "o": {"type": "object", "properties": {"x": {"type": "integer"}}},
    "ios": {"x-kubernetes-int-or-string": True},
    "t": {"type": "string", "format": "date-time"}, "du": {"type": "string", "format": "duration"}}}
checks = dict(copy.deepcopy(VALUES), **{"x-kubernetes-validations": [{"rule": r} for r in TRUE_RULES]})
errs = dict(copy.deepcopy(VALUES), **{"x-kubernetes-validations": [{"rule": r} for r in ERR_RULES]})
spec = {"type": "object",
  "x-kubernetes-validations": [
    {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas", "fieldPath": ".minReplicas"},
    {"rule": "!has(self.banned)", "reason": "FieldValueForbidden", "message": "banned is forbidden"},
    {"rule": "size(self.name) <= 8", "messageExpression": "'name ' + self.name + ' is longer than 8'"},
    {"rule": "has(self.owner) || !has(self.team)", "reason": "FieldValueRequired", "message": "owner is required with a team"},
    {"rule": "!has(self.tags) || self.tags.all(t, self.tags.exists_one(u, u == t))", "reason": "FieldValueDuplicate", "message": "tags repeat"},
    {"rule": "self.minReplicas >= oldSelf.minReplicas", "message": "minReplicas may only grow"},
    {"rule": "!has(self.mode) || self.mode in ['fast', 'slow']", "messageExpression": "'mode ' + self.mode + ' is unknown'", "message": "bad mode"},
    {"rule": "!has(self.mode) || self.mode != 'broken'", "messageExpression": "self.mode + '\\nmore'", "message": "fallback message"},
  ],
  "properties": {
    "minReplicas": {"type": "integer", "default": 0}, "maxReplicas": {"type": "integer", "default": 10},
    "name": {"type": "string", "default": "g", "maxLength": 40}, "banned": {"type": "string"}, "owner": {"type": "string"},
    "team": {"type": "string"}, "mode": {"type": "string", "maxLength": 20}, "note": {"type": "string"},
    "tags": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 10}},
    "count": {"type": "integer", "maximum": 100},
    "size": {"type": "integer", "x-kubernetes-validations": [
        {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True, "message": "size may not shrink"}]},
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "items": {"type": "object", "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [{"rule": "self.port % 2 == 0", "message": "even ports only"}]}},
  }}
misc = {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "!has(self.x__dash__y) || !has(self.__namespace__) || self.x__dash__y != self.__namespace__",
             "message": "x-y must differ from namespace"},
            {"rule": "!has(self.ios) || self.ios == 5 || self.ios == '5%'",
             "message": "ios is 5 or 5%"}],
        "properties": {"x-y": {"type": "string"}, "namespace": {"type": "string"},
                       "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                       "ios": {"x-kubernetes-int-or-string": True}}}
status = {"type": "object",
          "x-kubernetes-validations": [{"rule": "!has(self.phase) || self.phase in ['Ok', 'Failed']", "message": "unknown phase"}],
          "properties": {"phase": {"type": "string", "maxLength": 10}, "ready": {"type": "boolean"}}}
root = {"type": "object", "properties": {"spec": spec, "extra": {"type": "string"}, "checks": checks, "errs": errs,
                                         "misc": misc, "status": status},
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('cel-')", "message": "names start with cel-"}]}
def crd(schema):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.fid.example.com"},
            "spec": {"group": "fid.example.com", "scope": "Cluster",
                     "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}}]}}
def strip(s):
    if isinstance(s, dict):
        return {k: strip(v) for k, v in s.items() if k not in ("x-kubernetes-validations", "maximum")}
    return s
import sys
out = sys.argv[1]
json.dump(crd(root), open(out + "/cel-crd.json", "w"), indent=1, ensure_ascii=False); open(out + "/cel-crd.json", "a").write("\n")
json.dump(crd(strip(root)), open(out + "/cel-crd-lax.json", "w"), indent=1, ensure_ascii=False); open(out + "/cel-crd-lax.json", "a").write("\n")

BAD_RULES = [{"rule": "self.n > 1"}, {"rule": "self.nosuch > 1"}, {"rule": "self.n == 'x'"}, {"rule": "foo(self.n)"},
             {"rule": "self.n +"}, {"rule": "self.n"}, {"rule": "self.s.startsWith(1)"},
             {"rule": "self.n > 1", "messageExpression": "1"}, {"rule": "self.n > 1", "messageExpression": "self.nope"},
             {"rule": "self.s.matches('[')"}, {"rule": "[1, 'a', true].size() == 3"}, {"rule": "[1, dyn('a'), true].size() == 3"},
             {"rule": "int('x') == self.n"}, {"rule": "duration('x') > duration('1s')"}, {"rule": "self.n > 1 &&"},
             {"rule": "self.s.reverse() == ''"}, {"rule": "{'a': 1, 'b': 'x'}.size() == 2"}, {"rule": "self.l[0] == 1u"},
             {"rule": "self.m.nope == 'x' || self.o.y == 1"}, {"rule": "'%d'.format([self.s]) == ''"},
             {"rule": "'%d %d'.format([self.n]) == ''"}, {"rule": "'%d'.format([1, 2]) == ''"}, {"rule": "'%q'.format([1]) == ''"}, {"rule": "quantity('1').sign() == 1"},
             {"rule": "quantity('1').add('2') == quantity('3')"}, {"rule": "size(self.n) == 1"}, {"rule": "self.s in self.l"}]
bad = {"type": "object", "properties": {"spec": dict(copy.deepcopy(VALUES), **{"x-kubernetes-validations": BAD_RULES})}}
b = crd(bad)
b["metadata"]["name"] = "gadgetbads.fid.example.com"
b["spec"]["names"] = {"kind": "GadgetBad", "plural": "gadgetbads"}
json.dump(b, open(out + "/cel-crd-bad.json", "w"), indent=1, ensure_ascii=False); open(out + "/cel-crd-bad.json", "a").write("\n")
