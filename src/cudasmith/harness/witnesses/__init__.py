"""The witnesses: what the parent measures or checks itself, outside the candidate's reach.

Runs in: the parent (the judge's own process, which never imports candidate code). bracket.py is the
parent's clock around each timed request; rechecks.py the evidence every reply owes and the re-check of
timed outputs, read while the candidate is frozen; exclusive.py whether a timing window had the device to
itself; screen.py the static screen of a solution's source before any process starts; oracle.py the
judge's own worker seen from a session (reference outputs, comparisons, the device's peaks), and
roofline.py the roofline under which a time is refused as impossible; defences.py the table of every
defence (`cudasmith eval --explain-defences`).
May touch: what the parent reads of its workers from outside (/proc, NVML, the replies on their pipes,
outputs by reference), the judge's own worker, and a solution's source as text. It never imports a
solution, and imports no worker code: what a candidate's worker says is a claim these check.
"""
