# sbs_summary.py FILE — the medians of bench/sbs_bench.sh's JSON lines as a table:
# tok/s nanoserve / llama.cpp (ratio) per file and test, bold below 1.0x, and
# nanoserve's decode share of its bandwidth probe (of BW) and of the read of
# its own weights interleaved with the decode (of read; bench/paired.go).
# A second table gives, per file and test, the median of the per-round
# ratios with their range: the two tools of a round share its neighbours and
# its page-cache placement, so a round's ratio cancels what the round's
# conditions do to both, where the ratio of the two medians can pair one
# tool's good round with the other's bad one. Both are printed; the first
# table stays the one the issues' proofs name.
import json,statistics,collections,sys
rows=[json.loads(l) for l in open(sys.argv[1] if len(sys.argv)>1 else '/tmp/sbs_bench.jsonl')]
per=collections.defaultdict(dict)  # (cell, test) -> round -> {engine: tok/s}
loads=collections.defaultdict(list); bwfrac=collections.defaultdict(list); rdfrac=collections.defaultdict(list)
for r in rows:
    c=r['cell']; e=r['engine']; loads[r['round']].append(r['load'])
    if e=='nanoserve':
        for t in r['res']['tests']:
            per[(c,t['name'])].setdefault(r['round'],{})[e]=t['tok_s']['mean']
            if t['kind']=='tg' and t.get('bandwidth_frac'): bwfrac[c].append(t['bandwidth_frac'])
            if t['kind']=='tg' and t.get('paired_read_frac'): rdfrac[c].append(t['paired_read_frac'])
    else:
        for t in r['res']:
            name=('pp%d'%t['n_prompt']) if t['n_gen']==0 else ('tg%d'%t['n_gen'])
            per[(c,name)].setdefault(r['round'],{})[e]=t['avg_ts']
cells=[]; 
for r in rows:
    if r['cell'] not in cells: cells.append(r['cell'])
print('| file | pp128 | pp512 | tg128 | decode of BW | decode of read |')
print('|---|---|---|---|---|---|')
below=0; tot=0
for c in cells:
    out=[c]
    for t in ['pp128','pp512','tg128']:
        rs=per.get((c,t),{}).values()
        a=[x['nanoserve'] for x in rs if 'nanoserve' in x]; b=[x['llama.cpp'] for x in rs if 'llama.cpp' in x]
        if not a or not b: out.append('n/a'); continue
        ma,mb=statistics.median(a),statistics.median(b); ratio=ma/mb; tot+=1; below+= ratio<1
        out.append(('**%.1f / %.1f (%.2f×)**' if ratio<1 else '%.1f / %.1f (%.2f×)')%(ma,mb,ratio))
    out.append('%.0f%%'%(100*statistics.median(bwfrac[c])) if bwfrac[c] else '')
    out.append('%.0f%%'%(100*statistics.median(rdfrac[c])) if rdfrac[c] else '')
    print('| '+' | '.join(out)+' |')
print('\nbelow llama.cpp: %d of %d cells; load at round starts: %s'%(below,tot,{k:(min(x),max(x)) for k,x in loads.items()}))

print('\nper-round ratios nanoserve / llama.cpp, median [min, max]:\n')
print('| file | pp128 | pp512 | tg128 |')
print('|---|---|---|---|')
for c in cells:
    out=[c]
    for t in ['pp128','pp512','tg128']:
        q=[x['nanoserve']/x['llama.cpp'] for x in per.get((c,t),{}).values() if 'nanoserve' in x and 'llama.cpp' in x]
        out.append('%.2f× [%.2f, %.2f]'%(statistics.median(q),min(q),max(q)) if q else 'n/a')
    print('| '+' | '.join(out)+' |')
