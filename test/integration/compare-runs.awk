# Compares two parplan-run logs (--print-weights): the first file is the
# reference. Every `step N: loss X` line of the second must match the
# reference's step N to `tol` relative; every `weights NAME: ...` line must
# match the reference's sum of squares to `tol` relative and its sum to
# `tol` of the parameter's scale (sqrt(n * sum of squares)). Fails unless
# the second log has `steps` steps and some weights.
#   awk -v tol=1e-5 -v steps=5 -f compare-runs.awk WANT GOT
# Optional:
#   steptols="T1 T2 ..."  step N's loss to TN (the last for the steps after)
#   weights=0             no weights expected
#   floor=F               a parameter whose elements are under F of the
#                         reference's rms is compared as if they were at it
#                         (a gradient that is 0 up to rounding)
#   report=1              print the largest differences
function abs(x) { return x < 0 ? -x : x }
function max(a, b) { return a > b ? a : b }
BEGIN { ntols = split(steptols, tols, " ") }
FNR == NR && /^step/ { want[$2] = $4; next }
FNR == NR && /^weights/ {
  wsum[$2] = $6; wsq[$2] = $10; wn[$2] = $3
  allsq += $10; alln += $3
  next
}
/^step/ {
  n++
  t = ntols ? tols[$2 + 0 < ntols ? $2 + 0 : ntols] : tol
  d = max(abs($4 - want[$2]) - 1e-12, 0) / max(abs(want[$2]), 1e-30)
  if (d > t) bad = 1
  if (report) printf "step %d: loss %s, reference %s: %.1e relative (tolerance %g)\n", $2, $4, want[$2], d, t
}
/^weights/ {
  w++; sub(",", "", $6)
  if (!($2 in wsq)) { bad = 1; next }
  sq = max(abs(wsq[$2]), wn[$2] * floor * floor * allsq / max(alln, 1))
  d = max(max(abs($10 - wsq[$2]) - 1e-12, 0) / max(sq, 1e-30),
          max(abs($6 - wsum[$2]) - 1e-12, 0) / max(sqrt(wn[$2] * sq), 1e-30))
  if (d > tol) bad = 1
  if (d > worst) { worst = d; worstname = $2 }
}
END {
  if (report && w) printf "%d parameters, largest difference %.1e (%s), tolerance %g\n", w, worst, worstname, tol
  exit (bad || n != steps || (w == 0 && weights != "0"))
}
