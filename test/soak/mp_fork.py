# mp_fork - python3 multiprocessing with the fork start method while the
# parent's threads allocate (sqlite3 and dicts), then subprocess from
# several threads. Prints "done".
import multiprocessing as mp, os, sqlite3, subprocess, threading

stop = False

def churn():
    db = sqlite3.connect(":memory:")
    db.execute("create table t(a, b)")
    i = 0
    while not stop:
        db.execute("insert into t values (?, ?)", (i, "x" * (i % 100)))
        if i % 200 == 0:
            db.execute("delete from t")
        d = {str(k): [k] * 3 for k in range(50)}
        i += 1

def job(n):
    return sum(len(str(k)) for k in range(n))

def spawn():
    for _ in range(5):
        subprocess.run(["true"], check=True)

if __name__ == "__main__":
    mp.set_start_method("fork")
    ts = [threading.Thread(target=churn) for _ in range(2)]
    for t in ts: t.start()
    with mp.Pool(3) as pool:
        assert sum(pool.map(job, range(200))) > 0
    sp = [threading.Thread(target=spawn) for _ in range(3)]
    for t in sp: t.start()
    for t in sp: t.join()
    stop = True
    for t in ts: t.join()
    print("done")
