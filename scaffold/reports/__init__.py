"""Reports built from trial records alone (no pytest needed).

analysis.py    build_analysis(): one frozen model of every figure the reports show (pure)
summary.py     summary.md;  comparison.py: comparison_report.md;  results.py: results.jsonl rows
gates.py       --gate expressions evaluated against an Analysis (pure)
config.py      which outputs: --html, --report-config, $COMET_EVAL_REPORT_CONFIG
load.py        read and merge experiment directories;  write.py: write every report atomically
"""
