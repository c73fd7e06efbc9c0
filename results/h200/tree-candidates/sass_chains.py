#!/usr/bin/env python3
"""Dependent-chain depths of FMNMX and FADD in cuobjdump -sass listings (step 35's check).

For each kernel (a cuobjdump 'Function :' section), scans the instructions in address order and
gives each FMNMX (FADD) the depth 1 + the largest depth of an FMNMX (FADD) that last wrote one of
its source registers, 0 for a source another instruction wrote. Straight-line approximation: a
loop's back edge is not followed, so a chain is counted within one unrolled softmax copy. Prints
per kernel: instructions, FMNMX and FADD counts, the deepest chain of each and how many
instructions end at depth >= 8.
"""
import re, sys, collections

reg = re.compile(r'(?<![A-Za-z0-9_])-?\|?(R\d+)')
def parse(lines):
    funcs = collections.OrderedDict(); cur = None
    for line in lines:
        m = re.search(r'Function : (\S+)', line)
        if m:
            cur = m.group(1); funcs[cur] = []; continue
        m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m and cur:
            funcs[cur].append(m.group(2).strip())
    return funcs

def depths(insts, family):
    last = {}  # reg -> depth of its last writer if in family, else 0
    out = []
    # Only the consumers' code after their first wgmma (the softmax copies): the per-tile maximum
    # of the V descales before it is a chain of its own.
    start = next((i for i, t in enumerate(insts) if re.search(r'\b[HQ]GMMA', t)), 0)
    for text in insts[start:]:
        t = re.sub(r'^@!?U?P\w+\s+', '', text)
        parts = t.split(None, 1)
        op = parts[0]; args = parts[1] if len(parts) > 1 else ''
        ops = [a.strip() for a in args.split(',')]
        base = op.split('.')[0]
        if not ops or not ops[0]:
            continue
        dst = reg.findall(ops[0])
        srcs = [r for a in ops[1:] for r in reg.findall(a)]
        if base == family:
            d = 1 + max([last.get(r, 0) for r in srcs] + [0])
            out.append(d)
            for r in dst[:1]: last[r] = d
        else:
            # a wide destination (R4.64 etc.) is approximated by its first register
            for r in dst[:1]: last[r] = 0
    return out

funcs = parse(open(sys.argv[1]).read().splitlines())
funcs = {k: v for k, v in funcs.items() if 'flash_forward' in k}
print('kernel\tinstructions\tFMNMX\tFMNMX max depth\tFMNMX at depth>=8\tFADD\tFADD max depth\tFADD at depth>=8')
for name, insts in funcs.items():
    mx = depths(insts, 'FMNMX'); ad = depths(insts, 'FADD')
    m = re.search(r'3v(\d\d)(\d+)(flash_forward\w*?_kernel).*?DTypeE(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)', name)
    short = (f'step {m.group(1)} {m.group(3)} dtype{m.group(4)} d{m.group(5)} Br{m.group(6)} Bc{m.group(7)} w{m.group(8)}' if m else name)
    hist = lambda ds: ' '.join(f'{d}:{ds.count(d)}' for d in sorted(set(ds)))
    print(f"{short}\t{len(insts)}\t{len(mx)}\t{max(mx, default=0)}\t{sum(d>=8 for d in mx)}\t{len(ad)}\t{max(ad, default=0)}\t{sum(d>=8 for d in ad)}")
    if '-v' in sys.argv:
        print('  FMNMX depths', hist(mx)); print('  FADD depths', hist(ad))
