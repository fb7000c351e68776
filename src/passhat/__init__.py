"""passhat: does your agent do the job right every time, and leave the world exactly as it should?"""

__version__ = "0.1.0"
