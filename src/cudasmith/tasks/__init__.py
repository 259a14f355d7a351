"""Problems: loading problem files, the built-in suite, and seeded inputs."""

from cudasmith.tasks.problem import Problem, list_task_names, load_problem, load_task

__all__ = ["Problem", "list_task_names", "load_problem", "load_task"]
