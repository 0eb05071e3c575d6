-- sqlite_bench.sql - the sqlite3 row of make bench: 200,000 rows inserted
-- into an in-memory table with an index on a text column, then a query
-- over it (sqlite3 -init benches/sqlite_bench.sql :memory: .quit).
create table t(a integer primary key, b text, c integer);
create index tb on t(b);
with recursive n(x) as (select 1 union all select x + 1 from n where x < 200000)
insert into t select x, printf('row %d %d', x * 7919 % 200000, x), x % 1000 from n;
select count(*), sum(c) from t where b like 'row 1%';
