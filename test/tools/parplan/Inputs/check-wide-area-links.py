"""Checks the links of a generated cluster file (JSON, as `parplan cluster
generate -o FILE.json` writes it) against docs/cluster.md#generated-geo-
distributed-clusters: what cluster-generate.test reads."""
import json
import re
import sys

cluster = json.load(open(sys.argv[1]))
units = {"Gbit/s": 1e9 / 8, "Mbit/s": 1e6 / 8, "GB/s": 1e9, "MB/s": 1e6,
         "ms": 1e-3, "us": 1e-6, "s": 1}


def value(text):
    number, unit = re.fullmatch(r"([0-9.e+-]+) *(\S+)", text).groups()
    return float(number) * units[unit]


links = cluster["region_links"]
regions = {node["region"] for node in cluster["nodes"]}
named = {region for link in links for region in link["regions"]}
print(f"{len(links)} region links, {len(cluster['nodes'])} machines, "
      f"every region has one: {named == regions}")
pairs = sorted((value(l["latency"]), value(l["bandwidth"]) * 8 / 1e9)
               for l in links)
print("latency within 10 to 250 ms:",
      all(10e-3 - 1e-9 <= latency <= 250e-3 + 1e-9 for latency, _ in pairs))
rates = sorted({round(rate, 6) for _, rate in pairs})
falling = all(pairs[i][1] >= pairs[i + 1][1] for i in range(len(pairs) - 1))
print("bandwidths:", " ".join(f"{rate:g}" for rate in rates),
      f"Gbit/s, falling with latency: {falling}")
