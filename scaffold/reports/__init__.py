"""Reports built from trial records alone (no pytest needed).

model.py       the frozen model every report renders (pure data)
analysis.py    build_analysis(): every figure, computed once, in one pass over the records (pure)
verdicts.py    the verdict of each treatment against the baseline: the policy (pure)
format.py      numbers as text, and the one rule for N/A, for Markdown, HTML and SVG (pure)
summary.py     summary.md;  comparison.py: comparison_report.md;  html.py (+ svg.py): report.html
results.py     results.jsonl rows;  gates.py: --gate expressions evaluated against an Analysis (pure)
config.py      which outputs: --html, --report-config, $COMET_EVAL_REPORT_CONFIG
load.py        read and merge experiment directories;  write.py: write every report atomically
markdown.py    the jinja2 environment of the Markdown reports
transcript.py  one trial's transcript.html, every text bounded (its template: templates/transcript.html.j2;
               transcripts.py, reading trial folders and writing the pages)
"""
