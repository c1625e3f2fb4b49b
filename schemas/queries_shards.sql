-- Named queries of a shard set (store/shards.py): Parquet files, read without a database.

-- name: shard_set_sources
-- Every source's path and content hash in a shard set; $1 the glob of its sources' files.
SELECT path, sha256 FROM read_parquet(?, hive_partitioning = false);
