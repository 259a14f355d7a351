"""Problems: loading problem files, the built-in suite, problem directories (KernelBench), seeded inputs."""

from cudasmith.tasks.directory import ProblemDirectory, load_problem_dir
from cudasmith.tasks.problem import Problem, list_task_names, load_problem, load_task

__all__ = ["Problem", "ProblemDirectory", "list_task_names", "load_problem", "load_problem_dir", "load_task"]
