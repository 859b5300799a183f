"""The engine: records in, evidence and statuses out (:mod:`.evaluate`), over a context of
indexed runs read from a source, with the stored pieces of an incremental evaluation, the
per-config facts, bisects, confounds and subjects."""
