"""The wire: what the parent and its workers say to each other, as types, and how it crosses.

Runs in: every process of the judge (parent, workers, supervisor). messages.py holds one request class per
op and its reply (outputs.py the replies about calls: outputs by reference, the evidence owed), fields.py
writes them as JSON headers and reads them back with every field's type checked, protocol.py frames a
header and raw tensor bytes on a pipe, transfer.py moves outputs by CUDA IPC or shared memory (a folder of
its own per candidate, shared_memory.py), results.py and status.py the typed results that ride in them.
May touch: pipes and shared memory it is handed. It imports nothing else of the harness.
"""
