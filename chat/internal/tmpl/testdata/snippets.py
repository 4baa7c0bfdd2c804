#!/usr/bin/env python3
"""Render the snippets below with Python Jinja2 in Hugging Face's chat-template
environment and write snippets.json, which TestSnippets (chat/internal/tmpl)
checks byte for byte. Each snippet exercises one piece of Jinja semantics
(whitespace control, scoping, Undefined, printing, filters, tests, methods).

Regenerate: python3 chat/internal/tmpl/testdata/snippets.py
(or go test ./chat/internal/tmpl -run TestSnippets -update). Needs jinja2.
"""
import json
import os

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

VARS = {
    "s": "Hello World",
    "e": "",
    "n": 3,
    "f": 2.5,
    "t": True,
    "z": None,
    "l": [3, 1, 2],
    "words": ["b", "A", "c", "a"],
    "d": {"b": 1, "a": 2, "c": {"x": [1, 2]}},
    "msgs": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi <there> & 'you'"},
        {"role": "assistant", "content": "  Hello!\n", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1, "b": "é"}}}]},
        {"role": "user", "content": "ünïcödé 😀"},
    ],
    "text": "line one\n  line two\n\nline four",
}

SNIPPETS = [
    # whitespace control, trim_blocks, lstrip_blocks
    "a\n  {% if t %}\n  b\n  {% endif %}\nc",
    "a  {%- if t %} b {% endif -%}  c",
    "a\n  {%+ if t %}b{% endif %}\nc",
    "{% if t +%}\nx{% endif %}",
    "a\n    {# comment #}\nb",
    "a {#- c -#} b",
    "{{ 'x' }}\n{{ 'y' }}\n",
    "{{- '  x  ' -}}  \n  {{ 'y' }}",
    "  {{ 'x' }}  {% if t %}y{% endif %}",
    "{% raw %}{{ not }} {% a tag %}{% endraw %}!",
    "x {%- raw -%}  {{ a }}  {%- endraw -%} y",
    "{% for i in l %}\n  {{ i }}\n{% endfor %}",
    "{% for i in l -%}\n  {{ i }}\n{%- endfor %}",
    "a\r\nb\rc\n",
    "{% if t %}\n\n{% endif %}x",
    "  {% if t %}x{% endif %}",
    "{% if t %}\n  {% if t %}y{% endif %}{% endif %}",
    "{{ 'a' }}\n  {% if t %}y{% endif %}|{{ 'b' }}  {% if t %}z{% endif %}",
    "[{{ 'abc'|center(6) }}][{{ 'ab'|center(5) }}][{{ 'ab'.center(7) }}][{{ 'abc'.center(8) }}][{{ 'a'.center(4) }}]",
    # literals and printing
    "{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 1_000 }}",
    "{{ none }} {{ true }} {{ False }} {{ z }} {{ [] }} {{ {} }} {{ () }} {{ (1,) }} {{ (1, 'a') }}",
    "{{ ['a', \"b'c\", 'd\"e', none, 1.0, [true]] }}",
    "{{ {'a': 1, 'b': [1, 2], 3: none} }}",
    "{{ 'a\\tb\\n\\u00e9\\x41\\\\' }}|{{ \"q'\" }}|{{ 'it''s' }}",
    "{{ ['\\n', 'é', '\\x01', '\\\\'] }}",
    "{{ 'a' 'b' }}",
    "{{ 1, 2 }}",
    "{{ d }}",
    "{{ msgs[2].tool_calls }}",
    # arithmetic and operators
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}",
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ -n|abs }}",
    "{{ 'ab' * 3 }} {{ 3 * 'ab' }} {{ [1] * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none ~ true }}",
    "{{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} {{ none == none }} {{ 1 < 2 < 3 }}",
    "{{ 'ell' in s }} {{ 2 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ not 'x' in s }}",
    "{{ t and 'yes' }} {{ z or 'default' }} {{ 0 or '' }} {{ 1 and 0 }} {{ not z }}",
    "{{ 'a' if t else 'b' }} {{ 'a' if z else 'b' }} [{{ 'a' if z }}]",
    "{{ 'a' if t else 'b' if z else 'c' }}",
    "{{ 1 + 'a' }}",
    "{{ 'a' < 1 }}",
    "{{ 1 / 0 }}",
    "{{ n + f }} {{ n * f }} {{ n - 0.5 }} {{ n / 4 }} {{ true + 1 }}",
    # subscript and slicing
    "{{ l[0] }} {{ l[-1] }} {{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ s[0] }} {{ s[-5:] }} {{ s[::-1] }}",
    "{{ msgs[1]['content'] }} {{ msgs[1].content }} {{ d['c']['x'][1] }} {{ d.c.x.0 }}",
    "{{ 'ünï'[1] }} {{ 'ünïcödé'[2:5] }} {{ 'ünï'|length }}",
    "[{{ l[10] }}] [{{ d.missing }}] [{{ d['missing'] }}]",
    "{{ d.missing.x }}",
    "{{ l[1:2:0] }}",
    # Undefined
    "[{{ undefined_var }}] {{ undefined_var is defined }} {{ undefined_var|length }} {{ undefined_var|default('dflt') }}",
    "{% for x in undefined_var %}x{% else %}empty{% endfor %}",
    "{{ undefined_var ~ 'x' }}",
    "{{ undefined_var + 'x' }}",
    "{{ undefined_var.attr }}",
    "{{ undefined_var['k'] }}",
    "{{ undefined_var() }}",
    "{{ undefined_var == undefined_other }} {{ 'x' in undefined_var }} {{ undefined_var|list }}",
    "{% if undefined_var %}y{% else %}n{% endif %}",
    "{{ undefined_var|string }}|{{ undefined_var|trim }}|{{ undefined_var|upper }}|{{ undefined_var|join(',') }}",
    "{{ undefined_var|tojson }}",
    "{{ z.attr }}|{{ z.attr is defined }}",
    "{{ undefined_var < 1 }}",
    "{{ undefined_var is none }} {{ undefined_var is string }} {{ undefined_var is iterable }} {{ undefined_var is sequence }}",
    # for loops
    "{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
    "{% for i in l %}{{ loop.previtem }}-{{ loop.nextitem }}|{% endfor %}",
    "{% for i in l %}{{ loop.cycle('a', 'b') }}{% endfor %}",
    "{% for i in [1, 1, 2, 2, 3] %}{% if loop.changed(i) %}{{ i }}{% endif %}{% endfor %}",
    "{% for i in l if i > 1 %}{{ i }}{{ loop.length }}{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %}{% for c in 'abc' %}{{ c }}.{% endfor %}",
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}",
    "{% for i in l %}{% for j in l %}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}",
    "{% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}",
    "{% set x = 1 %}{% for i in l %}{{ x }}{% set x = i %}{% endfor %}{{ x }}",
    "{% for i in [] %}x{% else %}empty{% endfor %}",
    "{% for i in z %}x{% endfor %}",
    "{% for i in 5 %}x{% endfor %}",
    "{% for m in msgs %}{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{% for i in l %}{{ i }}{% endfor %}{{ i }}",
    "{{ loop }}",
    "{% for x in [1, [2, [3]], 4] recursive %}{% if x is iterable %}({{ loop(x) }}){% else %}{{ x }}@{{ loop.depth }}{% endif %}{% endfor %}",
    "{% for x in l %}{{ loop(l) }}{% endfor %}",
    "a \u3000{%- if t %}b{% endif %}",
    # set, namespace, with
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = [1, 2] %}{{ c }}",
    "{% set ns = namespace(x=0, y='a') %}{% for i in l %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ ns.y }}",
    "{% set ns = namespace() %}{% set ns.found = false %}{% for m in msgs %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}",
    "{% set x %}block {{ n }}{% endset %}[{{ x }}]",
    "{% set x | upper %}shout {{ s }}{% endset %}{{ x }}",
    "{% set x = 1 %}{% if t %}{% set x = 2 %}{% endif %}{{ x }}",
    "{% with a = 1, b = n %}{{ a + b }}{% endwith %}[{{ a }}]",
    "{% set d2 = {'k': 'v'} %}{{ d2.k }}",
    "{% set x = 5 %}{% set y = x ~ '' %}{{ y|length }}",
    "{% set l2 = [] %}{{ l2.append(1) }}",
    "{% set l2 = [] %}{{ l2.append(l2) }}{{ l2 == l2 }}{{ l2 }}{{ l2|tojson }}",
    "{{ d.update({'z': 1}) }}",
    # macros and call blocks
    "{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|{{ m(a=0) }}",
    "{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m() }}",
    "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}",
    "{% macro w(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call w('b') %}in {{ n }}{% endcall %}",
    "{% macro w() %}{% for i in l %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) w() %}<{{ x }}>{% endcall %}",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}",
    "{% set g = 'global' %}{% macro m() %}{{ g }}{{ n }}{% endmacro %}{{ m() }}",
    "{% macro m() %}x{% endmacro %}{{ m() ~ 'y' }} {{ m()|length }} {{ m is callable }}",
    # filter blocks
    "{% filter upper %}hello {{ s }}{% endfilter %}",
    "{% filter trim | replace('a', 'b') %}  banana  {% endfilter %}|",
    # tests
    "{{ n is number }} {{ f is float }} {{ n is integer }} {{ t is boolean }} {{ t is number }} {{ t is integer }} {{ s is string }} {{ d is mapping }} {{ l is sequence }} {{ d is sequence }} {{ s is iterable }} {{ n is iterable }}",
    "{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ z is none }} {{ z is not none }} {{ t is true }} {{ 1 is true }} {{ false is false }}",
    "{{ n is eq 3 }} {{ n is ne 3 }} {{ n is gt 2 }} {{ n is lt 2 }} {{ n is ge 3 }} {{ n is le 3 }} {{ 2 is in l }} {{ n is equalto 3 }} {{ n is sameas 3 }}",
    "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ range is callable }}",
    "{{ 1 + 1 is eq 2 }}",
    "{{ n is nonexistent_test }}",
    # filters
    "{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ s|upper }}|{{ s|lower }}|{{ 'hello wORLD-foo (bar'|title }}|{{ 'hELLO'|capitalize }}",
    "{{ l|length }} {{ s|length }} {{ d|length }} {{ l|count }} {{ l|first }} {{ l|last }} {{ l|sum }} {{ l|min }} {{ l|max }} {{ words|min }} {{ words|max }}",
    "{{ l|join(', ') }} {{ l|join }} {{ msgs|join('|', attribute='role') }} {{ [1, none, 'a']|join('-') }}",
    "{{ l|sort }} {{ l|sort(reverse=true) }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ msgs|sort(attribute='role')|map(attribute='role')|list }}",
    "{{ words|unique|list }} {{ words|unique(case_sensitive=true)|list }} {{ l|reverse|list }} {{ s|reverse }}",
    "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ {'b': 1, 'a': 3}|dictsort(by='value') }}",
    "{{ d|items|list }} {{ d|list }} {{ s|list }} {{ (1, 2)|list }}",
    "{{ msgs|map(attribute='role')|list }} {{ msgs|map(attribute='missing', default='-')|list }} {{ l|map('string')|list }} {{ words|map('upper')|join }}",
    "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ msgs|selectattr('tool_calls')|list|length }} {{ msgs|selectattr('tool_calls', 'defined')|list|length }}",
    "{{ l|select('odd')|list }} {{ l|reject('odd')|list }} {{ [0, 1, '', 'a', none]|select|list }}",
    "{{ l|select('odd') }}",
    "{{ l|map('string')|tojson }}",
    "{% if [] | select %}generator is true{% endif %}",
    "{% set g = l|select %}{{ g|list }}{{ g|list }}",
    "{{ z|selectattr('x')|list }} {{ z|map(attribute='x')|list }}",
    "{{ l|select|length }}",
    "{{ text|indent }}|{{ text|indent(2, true) }}|{{ text|indent('> ', blank=true) }}|{{ 'one\\n'|indent(2) }}",
    "{{ 'a-b-a'|replace('a', 'x') }} {{ 'a-b-a'|replace('a', 'x', 1) }} {{ 42|string ~ '!' }} {{ 'é'|string }}",
    "{{ '3'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 2|float }} {{ 'x'|float }}",
    "{{ 2.567|round }} {{ 2.567|round(2) }} {{ 2.5|round(0, 'floor') }} {{ 2.1|round(0, 'ceil') }} {{ -3|abs }} {{ -2.5|abs }}",
    "{{ ''|default('d') }} {{ ''|default('d', true) }} {{ z|default('d') }} {{ z|d('d', true) }} {{ undefined_var|d }}",
    "{{ 'x'|center(7) }}|{{ '%s-%d'|format('a', 3) }}|{{ 'long text here'|truncate(9) }}|{{ '<b>x</b>  y'|striptags }}|{{ 'one two, three'|wordcount }}",
    "{{ '<a href=\"x\">&'|e }} {{ '<a>'|escape|escape }} {{ '<a>'|safe }}",
    "{{ 'a '|safe + '<b>' }}|{{ '<b>' + 'c'|safe }}|{{ 'a'|safe ~ '<b>' }}|{{ ('<x>'|safe + '<y>')|upper }}|{{ (' <x> '|safe)|trim + '&' }}",
    "{{ msgs|groupby('role')|map(attribute='grouper')|list }}",
    "{{ d|attr('b') }}",
    "{{ s|nonexistent_filter }}",
    "{% if t %}{{ s|nonexistent_filter }}{% endif %}",
    "{% if z %}{{ s|nonexistent_filter }}{% endif %}ok",
    # tojson
    "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ msgs[2]|tojson }}|{{ 'é\\n\"'|tojson }}|{{ [1.0, 2.50, 1e20, none, true]|tojson }}",
    "{{ d|tojson(sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ (1, 2)|tojson }}|{{ {1: 2}|tojson }}",
    "{{ {'a': '<b>&'}|tojson }}",
    # string methods
    "{{ s.startswith('Hell') }} {{ s.endswith(('x', 'ld')) }} {{ s.startswith('World', 6) }} {{ '  x '.strip() }}|{{ 'xxyxx'.strip('x') }}|{{ '  x '.lstrip() }}|{{ '  x '.rstrip() }}|",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }}",
    "{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Hi'.swapcase() }}",
    "{{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.index('W') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }} {{ 'é'.find('x') }}",
    "{{ '{} and {}'.format('a', 1) }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} {{ '{:>5}|{:<4}|{:^6}|{:.2f}'.format('a', 'b', 'c', 3.14159) }} {{ '{{}}'.format() }}",
    "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'a1'.isalnum() }} {{ '  '.isspace() }} {{ 'AB'.isupper() }} {{ 'ab'.islower() }} {{ '42'.zfill(5) }} {{ 'ab'.center(6, ) }}|{{ 'ab'.ljust(4) }}|{{ 'ab'.rjust(4) }}|",
    "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'prefix-x'.removeprefix('prefix-') }}",
    "{{ s.nonexistent() }}",
    "{{ s.nonexistent }}|{{ s.upper }}",
    # dict and list methods
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list|length }} {{ d.items()|list|first }}",
    "{{ l.index(1) }} {{ l.count(3) }} {{ d['get'] }}",
    "{{ msgs[2].tool_calls[0].function.arguments.items()|list }}",
    # globals
    "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b=2) }} {{ namespace(a=1).a }}",
    "{% set c = cycler('x', 'y') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}",
    "{% set j = joiner('|') %}{% for i in l %}{{ j() }}{{ i }}{% endfor %}",
    "{{ range(100001)|length }}",
    "{{ raise_exception('boom') }}",
    "{{ strftime_now('%Y-%m-%d') is string }}",
    # generation block
    "{% generation %}gen {{ n }}{% endgeneration %}!",
    # parse errors
    "{% if t %}x",
    "{% for x y %}{% endfor %}",
    "{{ 1 + }}",
    "{% endif %}",
    "{% unknown_tag %}",
    "{{ 'unterminated }}",
    "{% macro m(a=1, b) %}{% endmacro %}",
    "{% break %}",
    "{{ {'a' 1} }}",
    "{% set x = %}",
    "{% if %}{% endif %}",
]


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    class Raised(TemplateError):
        pass

    def raise_exception(message):
        raise Raised(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "2025-03-09"

    # {% generation %} as transformers registers it
    class Generation(jinja2.ext.Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    env.add_extension(Generation)
    out = []
    for src in SNIPPETS:
        r = {"src": src}
        try:
            t = env.from_string(src)
        except Exception as e:  # TemplateSyntaxError; SyntaxError for a stray {% break %}
            r["parse_error"] = "%s: %s" % (type(e).__name__, e)
            out.append(r)
            continue
        try:
            r["output"] = t.render(**VARS)
        except Exception as e:
            r["error"] = "%s: %s" % (type(e).__name__, e)
        out.append(r)
    with open(os.path.join(HERE, "snippets.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "snippets.py, jinja2 " + jinja2.__version__, "vars": VARS, "snippets": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote snippets.json:", len(out), "snippets")


if __name__ == "__main__":
    main()
