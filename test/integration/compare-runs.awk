# Compares two parplan-run logs (--print-weights): the first file is the
# reference. Every `step N: loss X` line of the second must match the
# reference's step N to `tol` relative; every `weights NAME: ...` line must
# match the reference's sum of squares to `tol` relative and its sum to
# `tol` of the parameter's scale (sqrt(n * sum of squares)). Fails unless
# the second log has `steps` steps and some weights.
#   awk -v tol=1e-5 -v steps=5 -f compare-runs.awk WANT GOT
function abs(x) { return x < 0 ? -x : x }
FNR == NR && /^step/ { want[$2] = $4; next }
FNR == NR && /^weights/ { wsum[$2] = $6; wsq[$2] = $10; wn[$2] = $3; next }
/^step/ { n++; if (abs($4 - want[$2]) > tol * abs(want[$2]) + 1e-12) bad = 1 }
/^weights/ {
  w++; sub(",", "", $6)
  if (!($2 in wsq)) bad = 1
  scale = sqrt(wn[$2] * wsq[$2])
  if (abs($10 - wsq[$2]) > tol * abs(wsq[$2]) + 1e-12) bad = 1
  if (abs($6 - wsum[$2]) > tol * scale + 1e-12) bad = 1
}
END { exit (bad || n != steps || w == 0) }
