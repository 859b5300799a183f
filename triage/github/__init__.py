"""GitHub REST access: the client, the sticky PR comment, Actions runs and logs."""

from .actions import (
    GitHubLogsGone,
    JobRecord,
    download_run_logs,
    fetch_job_log,
    fetch_workflow_run,
    list_run_artifacts,
    log_lines,
    status_for,
)
from .client import (
    GitHubAuthError,
    GitHubBodyTooLong,
    GitHubClient,
    GitHubError,
    GitHubNetworkError,
    GitHubNotFound,
    GitHubPermissionError,
    GitHubRateLimited,
    GitHubServerError,
    GitHubValidationError,
)
from .comments import DEFAULT_BOT_LOGIN, PostResult, upsert_comment, validate_repo

__all__ = [
    "DEFAULT_BOT_LOGIN",
    "GitHubAuthError",
    "GitHubBodyTooLong",
    "GitHubClient",
    "GitHubError",
    "GitHubLogsGone",
    "GitHubNetworkError",
    "GitHubNotFound",
    "GitHubPermissionError",
    "GitHubRateLimited",
    "GitHubServerError",
    "GitHubValidationError",
    "JobRecord",
    "PostResult",
    "download_run_logs",
    "fetch_job_log",
    "fetch_workflow_run",
    "list_run_artifacts",
    "log_lines",
    "status_for",
    "upsert_comment",
    "validate_repo",
]
