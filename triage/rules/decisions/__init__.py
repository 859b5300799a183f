"""The decisions: noise-aware statistics and their distributions, the conditions over runs
(each one holds, is contradicted or can't tell), and what runs say at a glance."""
