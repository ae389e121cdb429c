"""Exports of a merged graph: rdflib Dataset, networkx MultiDiGraph, JSON, Graphviz DOT, HTML picture.

The picture is one self-contained HTML file (no script, no external resource): an inline SVG laid
out by Graphviz `dot -Tsvg` when it is installed, else by a small built-in circular layout. Edges
are coloured by source KG, aligned nodes (ids in several KGs) are gold with a double border, topic
entities bold; every node shows its label and its ids.

So that a few hundred edges stay readable, the picture draws `display_graph(merged)`, not the raw
graph: a nameless Freebase CVT node (`m.cvt_…`, or an unnamed mid between two edges) becomes the
compound edge `r1 | r2` it stands for (tooltip: the CVT id); parallel edges between the same two
entities become one edge listing every relation (one colour per KG); and more than `BUNDLE_AT`
leaf entities reached from one entity over the same relation become one box naming the first few
and counting the rest. The data exports (JSON, networkx, RDF, `to_dot`) keep every edge.
"""
from __future__ import annotations

import html
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ...sparql.dialects import COMPOUND_SEP, OWL_SAMEAS, get_dialect
from ...sparql.errors import KgfedError
from ...sparql.results import Term
from .subgraph import Link, MergedGraph, Node

PALETTE = ("#1f6fb4", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#495057")
ALIGNED_FILL = "#ffe8a3"
GRAPH_NS = "urn:kgfed:graph:"
BUNDLE_AT = 8      # more leaf neighbours than this over one relation are drawn as one box
BUNDLE_NAMES = 6   # names listed in such a box


def kg_colours(merged: MergedGraph) -> dict[str, str]:
    """One colour per source KG, in the order of `merged.kgs`."""
    return {kg: PALETTE[k % len(PALETTE)] for k, kg in enumerate(merged.kgs)}


def to_json(merged: MergedGraph) -> dict[str, Any]:
    """`{"nodes": [{"ids": {kg: id}, "label", …}], "edges": [{"kg", "subject", "relation", "object", …}]}`."""
    return merged.to_json()


# -- RDF -------------------------------------------------------------------------------------------
def _iri(rendered: str) -> str:
    return rendered[1:-1] if rendered.startswith("<") and rendered.endswith(">") else rendered


def to_rdflib(merged: MergedGraph):
    """An rdflib `Dataset`: one named graph per source KG with its original triples (a CVT edge as its
    two hops through the CVT node) and labels, plus `urn:kgfed:graph:alignment` with owl:sameAs links."""
    from rdflib import Dataset, Literal, URIRef

    dataset = Dataset()
    uri = lambda value: Term("uri", value).to_rdflib()  # noqa: E731
    for kg, dialect_name in merged.kgs.items():
        dialect = get_dialect(dialect_name)
        graph = dataset.graph(URIRef(GRAPH_NS + kg))
        label_predicate = uri(_iri(dialect.label_predicate))
        for node in merged.nodes:
            if kg in node.ids and kg in node.labels:
                graph.add((uri(_iri(dialect.entity(node.ids[kg]))), label_predicate, Literal(node.labels[kg], lang=dialect.lang)))
        for edge in (e for e in merged.edges if e.kg == kg):
            subject = uri(_iri(dialect.entity(merged.nodes[edge.subject].ids[kg])))
            obj = uri(_iri(dialect.entity(merged.nodes[edge.object].ids[kg])))
            parts = edge.relation.split(COMPOUND_SEP)
            if len(parts) == 2 and edge.via:
                cvt = uri(_iri(dialect.entity(edge.via[0])))
                graph.add((subject, uri(_iri(dialect.relation(parts[0]))), cvt))
                graph.add((cvt, uri(_iri(dialect.relation(parts[1]))), obj))
            else:
                graph.add((subject, uri(_iri(dialect.relation(edge.relation))), obj))
    alignment = dataset.graph(URIRef(GRAPH_NS + "alignment"))
    for node in merged.nodes:
        for a in node.alignments:
            left = get_dialect(merged.kgs[a.source_kg]).entity(a.source)
            right = get_dialect(merged.kgs[a.target_kg]).entity(a.target)
            if left != right:
                alignment.add((uri(_iri(left)), uri(OWL_SAMEAS), uri(_iri(right))))
    return dataset


# RDF files that hold a dataset (one named graph per KG), by suffix: rdflib's format names.
RDF_FORMATS = {".trig": "trig", ".nq": "nquads", ".nquads": "nquads", ".trix": "trix", ".jsonld": "json-ld"}


def rdf_format(path: str | Path) -> str:
    """The RDF format `--rdf PATH` asks for by its suffix; a format that holds one graph only (Turtle, RDF/XML,
    N-Triples) or an unknown suffix is a one-line KgfedError (it would lose which KG said what)."""
    suffix = Path(path).suffix.lower()
    if suffix not in RDF_FORMATS:
        raise KgfedError(f"--rdf {path}: {suffix or 'no suffix'} names no RDF dataset format (the merged graph is one "
                         f"named graph per KG): end the name in {', '.join(RDF_FORMATS)}")
    return RDF_FORMATS[suffix]


def write_rdf(merged: MergedGraph, path: str | Path) -> None:
    """The RDF dataset of `merged` (`to_rdflib`) in the format its suffix names (`rdf_format`)."""
    to_rdflib(merged).serialize(destination=str(path), format=rdf_format(path))


# -- networkx --------------------------------------------------------------------------------------
def to_networkx(merged: MergedGraph):
    """A networkx `MultiDiGraph`: node i = merged.nodes[i]; one edge per source edge, keyed `kg:relation`."""
    import networkx as nx

    graph = nx.MultiDiGraph(kgs=dict(merged.kgs))
    for i, node in enumerate(merged.nodes):
        graph.add_node(i, ids=dict(node.ids), label=node.label, aligned=node.aligned, topic=node.topic, hop=node.hop)
    for edge in merged.edges:
        graph.add_edge(edge.subject, edge.object, key=f"{edge.kg}:{edge.relation}", kg=edge.kg,
                       relation=edge.relation, label=edge.label, via=list(edge.via), hop=edge.hop)
    return graph


# -- Graphviz --------------------------------------------------------------------------------------
def _dot_string(text: str) -> str:
    """A DOT double-quoted string (quotes and backslashes escaped, newlines as \\n)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n") + '"'


def node_title(node: Node) -> str:
    """What a node shows: its label, then its ids (`kg:id` for each KG)."""
    return node.label or next(iter(node.ids.values()), "?")


def node_ids_text(node: Node) -> str:
    return "  ".join(f"{kg}:{entity}" for kg, entity in node.ids.items())


def _edge_colour(colours: dict[str, str], kg: str) -> str:
    """The colour of an edge of one KG, or Graphviz's parallel colours "c1:c2" for an edge several KGs state."""
    return ":".join(colours[k] for k in kg.split("+") if k in colours) or PALETTE[-1]


def css_class(text: str) -> str:
    """A CSS class name for a KG or a relation label (letters, digits and - only)."""
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower())[:60]


def to_dot(merged: MergedGraph, title: str = "") -> str:
    """Graphviz DOT: edges coloured by KG, aligned nodes gold with a double border, topics bold,
    nameless CVT nodes as small dots; SVG classes `kg-NAME`/`rel-LABEL` let the page filter edges."""
    colours = kg_colours(merged)
    lines = [
        "digraph kgfed {",
        f"  graph [rankdir=LR, fontname=\"Helvetica\", fontsize=16, labelloc=t, label={_dot_string(title)}, "
        "nodesep=0.18, ranksep=1.6, bgcolor=\"white\"];",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12, fillcolor="#f8f9fa", color="#868e96"];',
        '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.7];',
    ]
    for i, node in enumerate(merged.nodes):
        if is_cvt(merged, i):  # a CVT whose other end is outside the graph: a dot, its id in the tooltip
            lines.append(f"  n{i} [shape=point, width=0.14, color=\"#495057\", label=\"\", "
                         f"tooltip={_dot_string('CVT ' + node_ids_text(node))}, class=\"cvt\"];")
            continue
        text = f"{node.label}\n{node_ids_text(node)}" if node.label else node_ids_text(node)
        attrs = {"label": _dot_string(text), "tooltip": _dot_string(node_ids_text(node))}
        if node.aligned:
            attrs.update(fillcolor=f'"{ALIGNED_FILL}"', peripheries="2", color='"#b08900"')
        else:
            kg = next(iter(node.ids))
            attrs.update(color=f'"{colours.get(kg, PALETTE[-1])}"')
        if node.topic:
            attrs.update(penwidth="2.5", fontname='"Helvetica-Bold"')
        lines.append(f"  n{i} [{', '.join(f'{k}={v}' for k, v in attrs.items())}];")
    hops: dict[int, list[int]] = {}
    for i, node in enumerate(merged.nodes):
        hops.setdefault(node.hop, []).append(i)
    if len(hops) > 1:  # topic entities, then each hop, left to right
        lines += [f"  {{rank=same; {'; '.join(f'n{i}' for i in members)};}}" for _, members in sorted(hops.items())]
    for edge in merged.edges:
        colour = _edge_colour(colours, edge.kg)
        tip = _dot_string(f"{edge.kg}: {edge.relation}" + (f" (via {', '.join(edge.via)})" if edge.via else ""))
        classes = " ".join([*(f"kg-{css_class(k)}" for k in edge.kg.split("+")),
                            *(f"rel-{css_class(part)}" for part in edge.label.split("\n"))])
        lines.append(f"  n{edge.subject} -> n{edge.object} [label={_dot_string(edge.label)}, color=\"{colour}\", "
                     f"fontcolor=\"{colour.split(':')[0]}\", tooltip={tip}, class=\"{classes}\"];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot: str, *, timeout: float = 120.0) -> str:
    """SVG markup from Graphviz `dot -Tsvg` (raises KgfedError when dot is missing or fails)."""
    binary = shutil.which("dot")
    if binary is None:
        raise KgfedError("Graphviz 'dot' is not installed: apt-get install graphviz (or write --json / --dot instead)")
    try:
        done = subprocess.run([binary, "-Tsvg"], input=dot.encode(), capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise KgfedError(f"Graphviz took over {timeout:.0f} s to lay out the graph: lower --hops/--width/--limit") from None
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise KgfedError(f"Graphviz dot failed: {reason[0] if reason else 'exit ' + str(done.returncode)}")
    svg = done.stdout.decode()
    return svg[svg.index("<svg"):]


def simple_svg(merged: MergedGraph, width: int = 1300, height: int = 900) -> str:
    """A JS-free SVG without Graphviz: topics in the centre, the rest on an ellipse, coloured edges
    (parallel edges of different KGs bend apart so both stay visible)."""
    colours = kg_colours(merged)
    cx, cy, rx, ry = width / 2, height / 2, width / 2 - 100, height / 2 - 40
    ring = [i for i, node in enumerate(merged.nodes) if not node.topic]
    middle = [i for i, node in enumerate(merged.nodes) if node.topic]
    place: dict[int, tuple[float, float]] = {i: (cx + (k - (len(middle) - 1) / 2) * 170, cy) for k, i in enumerate(middle)}
    for k, i in enumerate(ring):
        angle = 2 * math.pi * k / max(len(ring), 1) - math.pi / 2
        place[i] = (cx + rx * math.cos(angle), cy + ry * math.sin(angle))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'font-family="Helvetica, Arial, sans-serif">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    parallel: dict[frozenset, int] = {}
    for edge in merged.edges:
        (x1, y1), (x2, y2) = place[edge.subject], place[edge.object]
        k = parallel[frozenset((edge.subject, edge.object))] = parallel.get(frozenset((edge.subject, edge.object)), -1) + 1
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        bend = 22 * ((k + 1) // 2) * (1 if k % 2 else -1)
        mx, my = (x1 + x2) / 2 - bend * (y2 - y1) / length, (y1 + y2) / 2 + bend * (x2 - x1) / length
        colour = _edge_colour(colours, edge.kg).split(":")[0]
        out.append(f'<g class="edge"><title>{html.escape(edge.kg)}: {html.escape(edge.relation)}</title>'
                   f'<path d="M {x1:.1f} {y1:.1f} Q {mx:.1f} {my:.1f} {x2:.1f} {y2:.1f}" fill="none" stroke="{colour}" '
                   f'stroke-width="1.4" marker-end="url(#arrow)"/>'
                   f'<text x="{mx:.1f}" y="{my - 3:.1f}" font-size="10" fill="{colour}" text-anchor="middle">{html.escape(edge.label)}</text></g>')
    for i, node in enumerate(merged.nodes):
        x, y = place[i]
        fill = ALIGNED_FILL if node.aligned else "#f8f9fa"
        stroke = "#b08900" if node.aligned else colours.get(next(iter(node.ids)), PALETTE[-1])
        weight = "bold" if node.topic else "normal"
        out.append(f'<g class="node"><title>{html.escape(node_ids_text(node))}</title>'
                   f'<rect x="{x - 80:.1f}" y="{y - 17:.1f}" width="160" height="34" rx="6" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="{3 if node.aligned else 1.5}"/>'
                   f'<text x="{x:.1f}" y="{y - 2:.1f}" font-size="12" font-weight="{weight}" text-anchor="middle">{html.escape(node_title(node)[:26])}</text>'
                   f'<text x="{x:.1f}" y="{y + 11:.1f}" font-size="9" fill="#555" text-anchor="middle">{html.escape(node_ids_text(node)[:42])}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


# -- what the picture draws ------------------------------------------------------------------------
def is_cvt(merged: MergedGraph, index: int) -> bool:
    """A Freebase CVT drawn as an edge: in one KG whose dialect has CVTs, not a topic, `m.cvt_…` or nameless."""
    node = merged.nodes[index]
    if node.topic or len(node.ids) != 1:
        return False
    kg, ident = next(iter(node.ids.items()))
    return kg in merged.kgs and merged.dialect(kg).is_cvt(ident, node.label)


def _collapse_cvts(merged: MergedGraph) -> tuple[list[Link], set[int]]:
    """Edges with every CVT node replaced by compound edges through it, and the CVT nodes dropped.

    Each CVT's edge towards the topic side (lowest hop of its other end) is paired with each of its
    other edges: `a -r1-> cvt -r2-> b` is drawn `a -r1 | r2-> b`; an edge pointing the other way
    gets a `^` (reverse) mark. A CVT with a single edge stays a node.
    """
    touching: dict[int, list[Link]] = {}
    for edge in merged.edges:
        for end in {edge.subject, edge.object}:
            touching.setdefault(end, []).append(edge)
    cvts = {i for i in range(len(merged.nodes)) if is_cvt(merged, i) and len(touching.get(i, [])) >= 2}
    edges = [e for e in merged.edges if e.subject not in cvts and e.object not in cvts]
    for cvt in sorted(cvts):
        around = touching[cvt]
        if any(e.subject in cvts - {cvt} or e.object in cvts - {cvt} for e in around):
            cvts.discard(cvt)  # CVT next to CVT: too rare to draw cleverly, keep the nodes
            edges.extend(e for e in around if e not in edges)
            continue
        other = lambda e: e.object if e.subject == cvt else e.subject  # noqa: E731, B023 (used in this iteration only)
        anchor = min(around, key=lambda e: (merged.nodes[other(e)].hop, not merged.nodes[other(e)].topic))
        first = anchor.label if anchor.object == cvt else f"^{anchor.label}"
        for edge in around:
            if edge is anchor:
                continue
            second = edge.label if edge.subject == cvt else f"^{edge.label}"
            edges.append(Link(edge.kg, other(anchor), f"{anchor.relation}|{edge.relation}", other(edge),
                              f"{first} | {second}", (merged.nodes[cvt].ids[edge.kg],), max(anchor.hop, edge.hop)))
    return edges, cvts


def display_graph(merged: MergedGraph) -> MergedGraph:
    """The graph the picture draws: CVTs as compound edges, parallel edges as one, big fans bundled."""
    edges, dropped = _collapse_cvts(merged)
    # parallel edges (same two entities, same direction) become one, listing every relation
    grouped: dict[tuple[int, int], list[Link]] = {}
    for edge in edges:
        grouped.setdefault((edge.subject, edge.object), []).append(edge)
    degree: dict[int, int] = {}
    for a, b in grouped:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    # leaves fanning out of one entity over one relation: bundled above BUNDLE_AT
    fans: dict[tuple[int, str, bool], list[int]] = {}
    for (a, b), group in grouped.items():
        for hub, leaf, outward in ((a, b, True), (b, a, False)):
            node = merged.nodes[leaf]
            if degree[leaf] == 1 and degree[hub] > 1 and not node.topic and not node.aligned:
                fans.setdefault((hub, " / ".join(sorted({e.label for e in group})), outward), []).append(leaf)
    bundled = {leaf: key for key, leaves in fans.items() if len(leaves) > BUNDLE_AT for leaf in leaves}
    shown = MergedGraph(dict(merged.kgs), relation_labels=merged.relation_labels)
    where: dict[int, int] = {}
    for i, node in enumerate(merged.nodes):
        if i not in dropped and i not in bundled:
            where[i] = len(shown.nodes)
            shown.nodes.append(node)
    bundle_at: dict[tuple[int, str, bool], int] = {}
    for key, leaves in fans.items():
        if len(leaves) > BUNDLE_AT:
            names = sorted(node_title(merged.nodes[i]) for i in leaves)
            more = len(names) - BUNDLE_NAMES
            label = f"{len(names)} entities: " + ", ".join(names[:BUNDLE_NAMES]) + (f" … and {more} more" if more > 0 else "")
            kgs = {kg for i in leaves for kg in merged.nodes[i].ids}
            bundle_at[key] = len(shown.nodes)
            shown.nodes.append(Node({kg: f"{len(leaves)} ids" for kg in sorted(kgs)}, label,
                                    hop=min(merged.nodes[i].hop for i in leaves)))
    for (a, b), group in grouped.items():
        if a in bundled or b in bundled:
            leaf = a if a in bundled else b
            key = bundled[leaf]
            if leaf != fans[key][0]:
                continue  # one edge per bundle
            a, b = (where[key[0]], bundle_at[key]) if key[2] else (bundle_at[key], where[key[0]])
        else:
            a, b = where[a], where[b]
        stating = list(dict.fromkeys(e.kg for e in group))  # one arrow; `kg` "a+b" when several KGs state it
        shown.edges.append(Link("+".join(stating), a, " ; ".join(dict.fromkeys(f"{e.kg}:{e.relation}" for e in group)), b,
                                "\n".join(dict.fromkeys(e.label for e in group)), tuple(v for e in group for v in e.via),
                                min(e.hop for e in group)))
    return shown


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 edge`, `2 edges`, `1 entity`, `3 entities` (`many`: the plural when it is not word + s)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def caption(merged: MergedGraph, aligned: int) -> str:
    """The picture's summary: `12 entities (2 aligned across KGs), 1 edge from 1 KG`."""
    return (f"{plural(len(merged.nodes), 'entity', 'entities')} ({aligned} aligned across KGs), "
            f"{plural(len(merged.edges), 'edge')} from {plural(len(merged.kgs), 'KG')}")


def _drawn_as(merged: MergedGraph, shown: MergedGraph) -> str:
    """What the picture simplified, for the summary line ("" when it draws the graph as it is)."""
    cvts = sum(1 for i in range(len(merged.nodes)) if is_cvt(merged, i)) - sum(1 for i in range(len(shown.nodes)) if is_cvt(shown, i))
    bundles = sum(1 for n in shown.nodes if " entities: " in (n.label or "") and all(v.endswith(" ids") for v in n.ids.values()))
    if len(shown.edges) == len(merged.edges) and not cvts:
        return ""
    parts = [f"drawn as {plural(len(shown.nodes), 'box', 'boxes')} and {plural(len(shown.edges), 'arrow')}"]
    parts += [f"{plural(cvts, 'CVT node')} as compound edges r1 | r2"] if cvts else []
    parts += [f"{plural(bundles, 'fan')} of over {BUNDLE_AT} leaves as one box each"] if bundles else []
    return "; " + ", ".join(parts)


TOGGLED_RELATIONS = 12  # the most frequent relations get a hide switch


def _toggles(merged: MergedGraph, shown: MergedGraph) -> tuple[str, str]:
    """Script-free filters: a checkbox per KG and per frequent relation hides those arrows (CSS only).

    The inputs are siblings placed before `.graph`, so `#id:checked ~ .graph .class` reaches the SVG.
    """
    counts: dict[str, int] = {}
    for edge in shown.edges:
        for part in edge.label.split("\n"):
            counts[part] = counts.get(part, 0) + 1
    relations = sorted(counts, key=lambda r: (-counts[r], r))[:TOGGLED_RELATIONS]
    if len(shown.edges) < 30 or not relations:  # small pictures need no filters
        return "", ""
    switches = [(f"kg-{css_class(kg)}", f"{kg} edges") for kg in merged.kgs]
    switches += [(f"rel-{css_class(r)}", f"{r} ({counts[r]})") for r in relations]
    inputs = "".join(f'<input type="checkbox" id="hide-{c}" hidden>' for c, _ in switches)
    labels = "".join(f'<label for="hide-{c}"><span class="box"></span>{html.escape(text)}</label>' for c, text in switches)
    css = "\n".join(f"#hide-{c}:checked ~ .graph .{c} {{ display: none; }}\n"
                    f"#hide-{c}:checked ~ .filters label[for=hide-{c}] {{ text-decoration: line-through; color: #adb5bd; }}"
                    for c, _ in switches)
    return inputs + f'<div class="filters">hide (click): {labels}</div>', css


def to_html(merged: MergedGraph, title: str = "kgfed merged subgraph", *, layout: str = "auto") -> str:
    """A self-contained HTML page: legend, counts, the graph as inline SVG, and a table of aligned nodes.

    `layout`: "dot" (Graphviz, required), "simple" (built-in circle), or "auto" (dot when installed).
    """
    if layout not in {"auto", "dot", "simple"}:
        raise KgfedError(f"unknown layout {layout!r}: use auto, dot or simple")
    use_dot = layout == "dot" or (layout == "auto" and shutil.which("dot") is not None)
    shown = display_graph(merged)
    svg = render_svg(to_dot(shown)) if use_dot else simple_svg(shown)
    colours = kg_colours(merged)
    per_kg = {kg: sum(1 for e in merged.edges if e.kg == kg) for kg in merged.kgs}
    aligned = [n for n in merged.nodes if n.aligned]
    legend = "".join(
        f'<span class="key"><span class="swatch" style="background:{colours[kg]}"></span>{html.escape(kg)} edges ({per_kg[kg]})</span>'
        for kg in merged.kgs
    ) + f'<span class="key"><span class="swatch aligned"></span>aligned entity ({len(aligned)})</span>'
    rows = "".join(
        f"<tr><td>{html.escape(node_title(n))}</td>"
        + "".join(f"<td>{html.escape(n.ids.get(kg, ''))}</td>" for kg in merged.kgs)
        + f"<td>{html.escape(', '.join(sorted({a.method for a in n.alignments})))}</td>"
        f"<td>{min((a.confidence for a in n.alignments), default=1.0):.2f}</td></tr>"
        for n in aligned
    )
    header = "".join(f"<th>{html.escape(kg)}</th>" for kg in merged.kgs)
    toggles, toggle_css = _toggles(merged, shown)
    edge_rows = "".join(
        f"<tr><td>{html.escape(node_title(merged.nodes[e.subject]))}</td><td style=\"color:{colours[e.kg]}\">{html.escape(e.label)}</td>"
        f"<td>{html.escape(node_title(merged.nodes[e.object]))}</td><td>{html.escape(e.kg)}: {html.escape(e.relation)}"
        f"{html.escape(' via ' + ', '.join(e.via)) if e.via else ''}</td></tr>"
        for e in sorted(merged.edges, key=lambda e: (merged.nodes[e.subject].hop, node_title(merged.nodes[e.subject]), e.label))
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 16px 24px; color: #212529; }}
h1 {{ font-size: 20px; margin: 0 0 6px; }}
.summary {{ color: #495057; margin: 0 0 8px; }}
.legend {{ margin: 0 0 10px; }}
.key {{ margin-right: 18px; white-space: nowrap; }}
.swatch {{ display: inline-block; width: 28px; height: 4px; vertical-align: middle; margin-right: 6px; }}
.swatch.aligned {{ height: 14px; width: 20px; background: {ALIGNED_FILL}; border: 3px double #b08900; }}
.graph {{ overflow: auto; border: 1px solid #dee2e6; padding: 6px; }}
.graph svg {{ max-width: 100%; height: auto; }}
table {{ border-collapse: collapse; margin-top: 12px; font-size: 13px; }}
td, th {{ border: 1px solid #dee2e6; padding: 3px 8px; text-align: left; }}
.filters {{ margin: 0 0 8px; font-size: 13px; color: #495057; }}
.filters label {{ margin-right: 12px; white-space: nowrap; cursor: pointer; }}
{toggle_css}
</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p class="summary">{caption(merged, len(aligned))}{_drawn_as(merged, shown)}</p>
<div class="legend">{legend}</div>
{toggles}
<div class="graph">{svg}</div>
<details><summary>Aligned entities</summary>
<table><tr><th>entity</th>{header}<th>method</th><th>confidence</th></tr>{rows}</table></details>
<details><summary>All {len(merged.edges)} edges</summary>
<table><tr><th>from</th><th>relation</th><th>to</th><th>source</th></tr>{edge_rows}</table></details>
</body></html>
"""
