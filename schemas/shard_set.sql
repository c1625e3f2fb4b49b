-- The tables of a shard set (store/shards.py) over its Parquet files, so that every
-- view of the 10_..60_ files runs unchanged over a folder of shards: this file makes
-- the small tables, read at every open, and shard_views.sql the views over the large
-- ones. Both run after `SET VARIABLE tlview_shards = 'DIR'` (store.shards.open_shards,
-- `tlview sql --parquet DIR`); the duckdb CLI does the same with DIR/views.sql, which
-- every shard set holds.
--
-- Layout: DIR/<table>/source_id=<K>/data_0.parquet, Hive-partitioned by source. In the
-- files timeline_id counts the source's timelines from 0 and source_id comes from the
-- path; here every timeline gets the id a serial `tlview ingest` of the sources in
-- source_id order into an empty database would give it: 1 + the timelines of the
-- sources before it + its index. A source is in the set once its `sources` file exists
-- (written last), so a shard being written, or left half-written, is not read.

-- The small tables are read once, at open; the large ones stay Parquet (views).
CREATE OR REPLACE TABLE sources AS
SELECT CAST(source_id AS INTEGER) AS source_id, path, size, sha256, format, tool_version,
       ingested_at, CAST(attrs AS JSON) AS attrs
FROM read_parquet(getvariable('tlview_shards') || '/sources/*/*.parquet',
                  hive_partitioning = true)
ORDER BY source_id;

-- _shard_bases: per source, the id its timeline 0 takes.
CREATE OR REPLACE TABLE _shard_bases AS
WITH n AS (
    SELECT CAST(source_id AS INTEGER) AS source_id, count(*) AS n
    FROM read_parquet(getvariable('tlview_shards') || '/timeline_records/*/*.parquet',
                      hive_partitioning = true)
    GROUP BY ALL
)
SELECT s.source_id,
       CAST(1 + COALESCE(sum(COALESCE(n.n, 0)) OVER (ORDER BY s.source_id ROWS BETWEEN
            UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS INTEGER) AS base
FROM sources s LEFT JOIN n USING (source_id);

CREATE OR REPLACE TABLE timeline_records AS
SELECT CAST(t.timeline_id + b.base AS INTEGER) AS timeline_id, b.source_id, t.key, t.name,
       t.format, t.device, CAST(t.attrs AS JSON) AS attrs
FROM read_parquet(getvariable('tlview_shards') || '/timeline_records/*/*.parquet',
                  hive_partitioning = true) t
JOIN _shard_bases b ON b.source_id = t.source_id
ORDER BY 1;

CREATE OR REPLACE TABLE timeline_notes AS
SELECT CAST(t.timeline_id + b.base AS INTEGER) AS timeline_id, b.source_id,
       CAST(t.attrs AS JSON) AS attrs
FROM read_parquet(getvariable('tlview_shards') || '/timeline_notes/*/*.parquet',
                  hive_partitioning = true) t
JOIN _shard_bases b ON b.source_id = t.source_id;

-- run_records: a shard set keeps no record of the folders the user named, so its runs are
-- those a database written without them gets (store/runs.py assign_unassigned): one per
-- folder of its sources, a folder below another of them joining it (a debug tree joins
-- the folder of the trace beside it); the name is the folder's, numbered where repeated.
CREATE OR REPLACE TABLE run_records AS
WITH f AS (
    SELECT regexp_replace(path, '/[^/]*$', '') AS folder, min(source_id) AS first_source_id
    FROM sources GROUP BY folder
), top AS (
    SELECT f.folder, (SELECT min(g.first_source_id) FROM f g
                      WHERE g.folder = f.folder OR starts_with(g.folder, f.folder || '/'))
               AS first_source_id
    FROM f WHERE NOT EXISTS (SELECT 1 FROM f g WHERE starts_with(f.folder, g.folder || '/'))
), named AS (
    SELECT *, regexp_extract(folder, '[^/]+$') AS base,
           row_number() OVER (PARTITION BY regexp_extract(folder, '[^/]+$')
                              ORDER BY first_source_id) AS k
    FROM top
)
SELECT CAST(row_number() OVER (ORDER BY first_source_id) AS INTEGER) AS run_id,
       base || CASE WHEN k > 1 THEN ' (' || k || ')' ELSE '' END AS name, folder AS root,
       CAST(first_source_id AS INTEGER) AS first_source_id,
       CAST(now() AS TIMESTAMP) AS created_at, '{"from": "folder"}'::JSON AS attrs
FROM named;

CREATE OR REPLACE TABLE tlview_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
