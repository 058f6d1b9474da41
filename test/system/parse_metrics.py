# Parses a Prometheus text exposition from stdin with prometheus_client's own parser and prints its
# families as JSON (test/system/metrics.test.ts): what a real scraper library makes of /metrics.
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def number(value):
    return "+Inf" if math.isinf(value) else value


families = [
    {
        "name": family.name,
        "type": family.type,
        "help": family.documentation,
        "samples": [{"name": s.name, "labels": s.labels, "value": number(s.value)} for s in family.samples],
    }
    for family in text_string_to_metric_families(sys.stdin.read())
]
json.dump(families, sys.stdout)
