-- The knowledge base's first schema (schema_version 1), as triage 0.1.0 created it
-- on SQLite: tests/kb/test_migrations.py builds a knowledge base from it and upgrades it.
-- Frozen: never edit; a schema change is a new migration.

CREATE TABLE meta (
	"key" VARCHAR NOT NULL, 
	value VARCHAR NOT NULL, 
	PRIMARY KEY ("key")
);
CREATE TABLE rulesource (
	path VARCHAR NOT NULL, 
	sha256 VARCHAR NOT NULL, 
	loaded_at DATETIME NOT NULL, 
	PRIMARY KEY (path)
);
CREATE TABLE investigation (
	id VARCHAR NOT NULL, 
	repo VARCHAR NOT NULL, 
	pr INTEGER NOT NULL, 
	title VARCHAR NOT NULL, 
	metric VARCHAR NOT NULL, 
	direction VARCHAR NOT NULL, 
	gate FLOAT, 
	source VARCHAR NOT NULL, 
	spec JSON NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_investigation_repo_pr UNIQUE (repo, pr)
);
CREATE TABLE signature (
	id VARCHAR NOT NULL, 
	kind VARCHAR NOT NULL, 
	source VARCHAR NOT NULL, 
	spec JSON NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE run (
	pk INTEGER NOT NULL, 
	investigation_id VARCHAR NOT NULL, 
	run_id VARCHAR NOT NULL, 
	config VARCHAR NOT NULL, 
	status VARCHAR NOT NULL, 
	metrics JSON NOT NULL, 
	provenance JSON NOT NULL, 
	url VARCHAR, 
	time DATETIME, 
	note VARCHAR, 
	log_excerpt VARCHAR, 
	signature_id VARCHAR, 
	signature_line VARCHAR, 
	excluded BOOLEAN NOT NULL, 
	excluded_reason VARCHAR, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (pk), 
	CONSTRAINT uq_run_identity UNIQUE (investigation_id, run_id, config), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE hypothesis (
	investigation_id VARCHAR NOT NULL, 
	id VARCHAR NOT NULL, 
	title VARCHAR NOT NULL, 
	parent VARCHAR, 
	position INTEGER NOT NULL, 
	status VARCHAR NOT NULL, 
	spec JSON NOT NULL, 
	PRIMARY KEY (investigation_id, id), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE recipe (
	investigation_id VARCHAR NOT NULL, 
	id VARCHAR NOT NULL, 
	position INTEGER NOT NULL, 
	spec JSON NOT NULL, 
	PRIMARY KEY (investigation_id, id), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE rule (
	investigation_id VARCHAR NOT NULL, 
	id VARCHAR NOT NULL, 
	hypothesis_id VARCHAR NOT NULL, 
	position INTEGER NOT NULL, 
	spec JSON NOT NULL, 
	PRIMARY KEY (investigation_id, id), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE manualevidence (
	pk INTEGER NOT NULL, 
	investigation_id VARCHAR NOT NULL, 
	hypothesis_id VARCHAR NOT NULL, 
	verdict VARCHAR NOT NULL, 
	reason VARCHAR NOT NULL, 
	author VARCHAR, 
	runs JSON NOT NULL, 
	source VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (pk), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE bisect (
	investigation_id VARCHAR NOT NULL, 
	id VARCHAR NOT NULL, 
	position INTEGER NOT NULL, 
	spec JSON NOT NULL, 
	PRIMARY KEY (investigation_id, id), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE evidence (
	pk INTEGER NOT NULL, 
	investigation_id VARCHAR NOT NULL, 
	hypothesis_id VARCHAR NOT NULL, 
	rule_id VARCHAR NOT NULL, 
	verdict VARCHAR NOT NULL, 
	reason VARCHAR NOT NULL, 
	runs JSON NOT NULL, 
	flags JSON NOT NULL, 
	"key" VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	retired_at DATETIME, 
	PRIMARY KEY (pk), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE statuschange (
	pk INTEGER NOT NULL, 
	investigation_id VARCHAR NOT NULL, 
	hypothesis_id VARCHAR NOT NULL, 
	previous VARCHAR, 
	status VARCHAR NOT NULL, 
	at DATETIME NOT NULL, 
	PRIMARY KEY (pk), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE TABLE post (
	pk INTEGER NOT NULL, 
	investigation_id VARCHAR NOT NULL, 
	url VARCHAR, 
	action VARCHAR NOT NULL, 
	at DATETIME NOT NULL, 
	since DATETIME, 
	PRIMARY KEY (pk), 
	FOREIGN KEY(investigation_id) REFERENCES investigation (id)
);
CREATE INDEX ix_investigation_pr ON investigation (pr);
CREATE INDEX ix_investigation_repo ON investigation (repo);
CREATE INDEX ix_run_investigation_config ON run (investigation_id, config);
CREATE INDEX ix_run_investigation_updated ON run (investigation_id, updated_at);
CREATE INDEX ix_manualevidence_investigation_id ON manualevidence (investigation_id);
CREATE INDEX ix_evidence_active ON evidence (investigation_id, retired_at);
CREATE INDEX ix_statuschange_investigation_id ON statuschange (investigation_id);
CREATE INDEX ix_post_investigation_id ON post (investigation_id);
INSERT INTO meta ("key", value) VALUES ('schema_version', '1');
