"""Lists the nodes of a cluster file (as `parplan cluster show --format yaml`
writes it) in another order, the same for the same seed (or reversed, for
`reverse`): the same machines and links, listed otherwise
(test/tools/parplan/placement.test, heterogeneous.test)."""
import random
import sys

path, seed = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
start = lines.index("nodes:") + 1
end = start
while end < len(lines) and lines[end].startswith("  "):
    end += 1
nodes, node = [], []
for line in lines[start:end]:
    if line.startswith("  - ") and node:
        nodes.append(node)
        node = []
    node.append(line)
nodes.append(node)
if seed == "reverse":
    nodes.reverse()
else:
    random.Random(int(seed)).shuffle(nodes)
shuffled = [line for node in nodes for line in node]
sys.stdout.write("\n".join(lines[:start] + shuffled + lines[end:]))
