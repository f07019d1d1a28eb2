"""Recompute the stored exhaustive throughput tables of the KAIROS chapter.

Every configuration of the $2.5/h budget, for each of the five models, under KAIROS's, Ribbon's
(FCFS) and CLKWRK's query distribution, and the Oracle; DRS on the configurations the chapter
needs; and RM2 under Gaussian batch sizes (Fig. 12). Seed 0, 2,000 queries per run. Points are
cached under $INFSCHED_CACHE, so an interrupted build resumes.

    .venv/bin/python data/kairos/build_tables.py
"""

from infsched.kairos.experiments import build_tables

if __name__ == "__main__":
    for path in build_tables():
        print("wrote", path)
